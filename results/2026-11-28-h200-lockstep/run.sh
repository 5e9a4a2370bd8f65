#!/usr/bin/env bash
# The stencil's compute alone and copy with every rank starting each timed step together
# (lockstep_until in core/src/stencil.rs), and pinned staging sized by the host-staged messages
# (staging_extent in core/src/halo/engine.rs), against the build before (haloport-base).
# PART=checks: CUDA conformance, the CLI's GPU tests, compute-sanitizer memcheck on lib-tq-ipc
# (no staging) and lib-tq-mpi (every message staged) with full verification, memcheck and
# racecheck on the 2-rank stencil (f64 and f32, plain and --graph; call 3 on), a dropped message.
# PART=perf, under MPS, builds interleaved: 2 ranks of the stencil sharing the GPU (ipc), the
# strong-scaling mode on 1, 2, 4 and 8 ranks sharing it; then the new build alone: 1 rank at
# 512^3 f64 and f32 (rows of 516), plain and --graph, 2 ranks over mpi, the sweep of ipc-tq and
# lib-tq-ipc.
# usage, from the repository root: PART=checks|perf bash results/2026-11-28-h200-lockstep/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/$PART; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/lockstep-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
# The device tool brings back a few files a call: everything but the log goes into OUT/PART.tgz.
pack() {
    tar czf "$top/$PART.tgz" -C "$top" --exclude log.txt "$PART" && find "$out" -type f ! -name log.txt -delete
}
show() {
    grep -E "step median|compute alone|exposed|verified|SUMMARY|test result|FAILED|panicked|error|exit" \
        "$out/$1.txt" | head -10
}
if [ "$PART" = checks ]; then
    step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
    HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
    for transport in ipc mpi; do
        name=memcheck-$transport
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer --tool memcheck \
            --error-exitcode 9 $bin/haloport run --backend cuda --transport $transport \
            --variant lib-tq-$transport --workload thesis-9 --pattern mixed --runs 1 --iters 3 \
            --warmup 1 --verify full
        show $name
    done
    # The graph mode and the plain step with 2 ranks sharing the GPU (the barriers before the
    # steps without the exchange run between them and the copies).
    for tool in memcheck racecheck; do for type in f64 f32-pad; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=stencil-$tool-$type-$mode
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type ${type%-pad} --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
    done; done; done
    step drop-send 60 mpirun -np 2 -x CUDA_VISIBLE_DEVICES $bin/haloport run --backend cuda \
        --transport ipc --variant lib-tq-ipc --workload large --runs 1 --iters 3 --warmup 0 \
        --timeout 2 --inject drop-send=1
    grep -E "timed out|exit|error" "$out/drop-send.txt" | head -4
    date -u
    pack
    exit 0
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for build in base new; do
        exe=$bin/haloport-$build; [ $build = new ] && exe=$bin/haloport
        name=stencil2-$build-$round
        step $name 100 mpirun -np 2 "${mps[@]}" $exe stencil --backend cuda --transport ipc \
            --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 --exchange-reps 20 \
            --json "$out/$name.json"
        show $name
        name=scaling-$build-$round
        step $name 200 mpirun -np 8 --oversubscribe "${mps[@]}" $exe stencil --backend cuda \
            --transport ipc --grid 256x256x256 --steps 10 --scaling strong \
            --plot "$out/$name.svg" --json "$out/$name.json"
        tail -9 "$out/$name.txt"
    done
done
for type in f64 f32-pad; do for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    [ $type = f32-pad ] && extra+=(--pad 2,0,0)
    name=stencil1-$type-$mode
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
        --grid 512x512x512 --type ${type%-pad} --steps 20 --exchange-reps 20 "${extra[@]}" \
        --json "$out/$name.json"
    show $name
done; done
name=stencil2-mpi
step $name 100 mpirun -np 2 "${mps[@]}" $bin/haloport stencil --backend cuda --transport mpi \
    --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 --exchange-reps 20 \
    --json "$out/$name.json"
show $name
step sweep 200 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
    --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
    --quiet --out "$out/sweep"
grep -E "ipc" "$out/sweep.txt"
rm -rf "$out/sweep/cells"; gzip -f "$out/sweep/sweep.json"
echo quit | nvidia-cuda-mps-control
date -u
pack
