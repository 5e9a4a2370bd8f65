#!/usr/bin/env bash
# Call 5: haloport stencil --no-overlap (each step's exchange, then the whole interior as a step
# without the exchange updates it), a build before this directory's commit: its flag is
# `--overlap off` since, the same code path, and one rank now goes without overlap by default. The CLI's GPU tests; compute-
# sanitizer memcheck and racecheck on 2 ranks sharing the GPU without overlap (f64, f32 rows of
# 136), plain and --graph; under MPS, two rounds, each layout with and without overlap, plain
# and --graph: 512^3 on 1 rank (f64 rows of 516 and 514, f32 rows of 520 placed for the tiles
# and for the interior); 2 ranks of 512^3 each sharing the GPU over ipc (1024x512x512, periodic
# in x); 8 ranks strong 256^3 (2x2x2, periodic in x, y and z), --graph, for correctness.
# usage, from the repository root: bash results/2026-11-29-h200-issue23-final/run-overlap.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, gpu-cuda-cli. Output in OUT/overlap.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/overlap; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/overlap-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/overlap-log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1
grep -E "test result|FAILED|panicked" "$out/gpu-cli.txt"
for tool in memcheck racecheck; do for type in f64 f32; do for mode in plain graph; do
    extra=(--no-overlap); [ $mode = graph ] && extra+=(--graph)
    [ $type = f32 ] && extra+=(--pad 6,0,0)
    name=sanitize-2ranks-$type-$mode-no-overlap-$tool
    step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU \
        compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
        --backend cuda --transport ipc --grid 256x64x64 --procs 2x1x1 --periodic x \
        --type $type --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}" --json "$out/$name.json"
    grep -E "step median|verified|SUMMARY" "$out/$name.txt"
done; done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    layouts="f64-rows516 f32-rows520 f32-rows520-interior"
    [ $round = 1 ] && layouts="$layouts f64-rows514"
    for layout in $layouts; do
        case $layout in
            f64-rows514) args=(--type f64) ;;
            f64-rows516) args=(--type f64 --pad 2,0,0) ;;
            f32-rows520) args=(--type f32 --pad 6,0,0) ;;
            f32-rows520-interior) args=(--type f32 --pad 6,0,0 --placement interior) ;;
        esac
        for mode in plain graph; do for overlap in on off; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            [ $overlap = off ] && extra+=(--no-overlap)
            name=stencil-$layout-$mode-overlap-$overlap-$round
            step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
                --grid 512x512x512 "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                --json "$out/$name.json"
            grep -E "step median|compute alone|verified" "$out/$name.txt"
        done; done
    done
    for overlap in on off; do
        extra=(); [ $overlap = off ] && extra+=(--no-overlap)
        name=stencil-2ranks-f64-overlap-$overlap-$round
        step $name 150 mpirun -np 2 "${mps[@]}" $bin/haloport stencil --backend cuda \
            --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
            --exchange-reps 20 "${extra[@]}" --json "$out/$name.json"
        grep -E "step median|compute alone|verified" "$out/$name.txt"
    done
done
step strong-8-no-overlap-graph 200 mpirun -np 8 --oversubscribe --bind-to none "${mps[@]}" \
    $bin/haloport stencil --backend cuda --transport ipc --periodic xyz --grid 256x256x256 \
    --steps 10 --exchange-reps 20 --graph --no-overlap --scaling strong --json "$out/strong-8.json"
grep -E "^\| [0-9]" "$out/strong-8-no-overlap-graph.txt"
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/overlap.tgz" -C "$top" overlap && rm -rf "$out"
