#!/usr/bin/env bash
# Issue 23: a neighbour that is the rank itself gets its messages copied by the pack straight
# into the halos they fill (HP_PAYLOAD_COPY; no slot, no unpack), against the build before
# (haloport-base, 48fc944: the code of 6066f99). The job of ../2026-11-27-h200-final/run.sh
# with this build (CUDA conformance, the CLI's GPU tests, the HIP backend through the
# HIP-on-CUDA layer, memcheck and racecheck of the 2-rank stencil, the sweep, scaling), plus memcheck and racecheck of the
# 1-rank periodic stencil (every message a local copy), f64 and f32, plain and --graph, and the
# step under MPS with both builds interleaved: 512^3 f64, f32 and f32 with rows of 516, 1 rank,
# plain and --graph; 2 ranks of 1024x512x512 periodic in x (their y and z neighbours are
# themselves); two rounds.
# usage, from the repository root: bash results/2026-11-27-h200-local-copy/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance, gpu-cuda-cli,
#   hip-nvidia-conformance, libhaloport_hipnv.so. Everything goes under OUT/job, packed into
#   OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/copy-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|shell:|verified|SUMMARY|test result|FAILED|panicked|error" \
        "$out/$1.txt" | head -12
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings; show hip-conformance
for tool in memcheck racecheck; do
    for type in f64 f32-pad; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=sanitize-$type-$mode-$tool
        step $name 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES \
            compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --transport ipc --grid 128x64x64 --procs 2x1x1 --periodic x \
            --type ${type%-pad} --fields 2 --steps 6 --exchange-reps 2 "${extra[@]}"
        show $name
        name=sanitize-1rank-$type-$mode-$tool
        step $name 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --grid 64x48x40 --type ${type%-pad} --fields 2 --steps 6 \
            --exchange-reps 2 "${extra[@]}"
        show $name
    done; done
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2; do
    for type in f64 f32 f32-pad; do for mode in plain graph; do for build in base new; do
        exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
        extra=(); [ $mode = graph ] && extra=(--graph)
        [ $type = f32-pad ] && extra+=(--pad 2,0,0)
        name=stencil-$type-$mode-$build-$round
        step $name 100 mpirun -np 1 "${mps[@]}" $exe stencil --backend cuda \
            --grid 512x512x512 --type ${type%-pad} --steps 20 --exchange-reps 20 "${extra[@]}" \
            --json "$out/$name.json"
        show $name
    done; done; done
    for build in base new; do
        exe=$bin/haloport; [ $build = base ] && exe=$bin/haloport-base
        name=stencil2-f64-$build-$round
        step $name 100 mpirun -np 2 "${mps[@]}" $exe stencil --backend cuda \
            --transport ipc --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 \
            --exchange-reps 20 --json "$out/$name.json"
        show $name
    done
done
for round in 1 2; do
    step sweep-$round 200 mpirun -np 2 "${mps[@]}" $bin/haloport sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$round"
    grep -E "ipc" "$out/sweep-$round.txt"
done
step scaling 200 mpirun -np 8 --oversubscribe "${mps[@]}" $bin/haloport stencil \
    --backend cuda --transport ipc --grid 128x128x128 --steps 6 --scaling strong \
    --plot "$out/scaling.svg" --json "$out/scaling.json"
tail -8 "$out/scaling.txt"
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
