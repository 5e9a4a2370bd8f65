#!/usr/bin/env bash
# Issue 23's figures with 9bd6c74 (the code before this session), on one H200, in two parts:
#   PART=checks  CUDA conformance, the CLI's GPU tests, the HIP backend through the HIP-on-CUDA
#                layer; compute-sanitizer memcheck and racecheck of the stencil, 2 ranks sharing
#                the GPU over ipc (periodic in x: the one launch) and 1 rank (every message a
#                local copy), f64 and f32 (rows of 136, --pad 6,0,0), plain and --graph, and of
#                lib-tq-ipc (small, thesis-9) with full verification;
#   PART=perf    under MPS, two rounds: the step at 512^3 (1 rank, every layout plain and
#                --graph, beside the copy: f64 rows of 514 and 516, f32 rows of 514 and 520,
#                f32 rows of 520 with --placement interior), the issue's CuPy probes, the sweep
#                of ipc-tq and lib-*-ipc with 2 ranks, and the scaling report of 1, 2, 4 and 8
#                ranks sharing the GPU.
# usage, from the repository root: PART=checks|perf bash results/2026-11-29-h200-issue23-final/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so. Output in OUT/PART.tgz and OUT/PART-log.txt.
set -uo pipefail
part=${PART:?PART=checks or PART=perf}
dir=$(cd "$1" && pwd); top=$2; out=$top/$part; mkdir -p "$out"; out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/$part-log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|verified|SUMMARY|test result|FAILED|panicked|error|one launch" \
        "$out/$1.txt" | head -12
}
if [ "$part" = checks ]; then
    step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
    HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
    LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
        --skip bindings; show hip-conformance
    for tool in memcheck racecheck; do
        for type in f64 f32; do for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            [ $type = f32 ] && extra+=(--pad 6,0,0)
            name=sanitize-2ranks-$type-$mode-$tool
            step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU \
                compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
                --backend cuda --transport ipc --grid 256x64x64 --procs 2x1x1 --periodic x \
                --type $type --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}" \
                --json "$out/$name.json"
            show $name
            name=sanitize-1rank-$type-$mode-$tool
            step $name 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport \
                stencil --backend cuda --grid 128x64x64 --type $type --fields 2 --steps 6 \
                --exchange-reps 2 "${extra[@]}" --json "$out/$name.json"
            show $name
        done; done
        for workload in small thesis-9; do
            name=sanitize-lib-$workload-$tool
            step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool $tool \
                --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
                --variant lib-tq-ipc --workload $workload --pattern mixed --runs 2 --iters 3 \
                --warmup 1 --verify full
            show $name
        done
    done
fi
if [ "$part" = perf ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
    mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
    for round in 1 2; do
        for layout in f64-rows514 f64-rows516 f32-rows514 f32-rows520 f32-rows520-interior; do
            case $layout in
                f64-rows514) args=(--type f64) ;;
                f64-rows516) args=(--type f64 --pad 2,0,0) ;;
                f32-rows514) args=(--type f32) ;;
                f32-rows520) args=(--type f32 --pad 6,0,0) ;;
                f32-rows520-interior) args=(--type f32 --pad 6,0,0 --placement interior) ;;
            esac
            for mode in plain graph; do
                extra=(); [ $mode = graph ] && extra=(--graph)
                name=stencil-$layout-$mode-$round
                step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                    --grid 512x512x512 "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                    --json "$out/$name.json"
                show $name | grep -E "step median|compute alone|verified"
            done
        done
    done
    step cupy-probe 200 python3 "$here/../2026-11-27-h200-cupy-probe/probe.py" --reps 15
    cat "$out/cupy-probe.txt"
    for round in 1 2; do
        step sweep-$round 200 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
            --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
            --runs 20 --out "$out/sweep-$round"
        grep -E "ipc" "$out/sweep-$round.txt"
        rm -rf "$out/sweep-$round/cells"; gzip -f "$out/sweep-$round/sweep.json"
    done
    step scaling 200 mpirun -np 8 --oversubscribe "${mps[@]}" $bin/haloport stencil \
        --backend cuda --transport ipc --grid 256x256x256 --steps 10 --scaling strong \
        --plot "$out/scaling.svg" --json "$out/scaling.json"
    tail -10 "$out/scaling.txt"
    echo quit | nvidia-cuda-mps-control
fi
date -u
tar czf "$top/$part.tgz" -C "$top" "$part" && rm -rf "$out"
