#!/usr/bin/env bash
# The stencil step at the speed of memory on one GPU: the CUDA conformance suite (the march
# form of the 27-point stencil bit for bit against the CPU), pack-bench 512^3 f64 (its device copy
# bandwidth, and no regression of the region kernels), and haloport stencil 512^3 in f64 and f32,
# march against points, interleaved, twice (each reports its compute alone against a copy of the
# fields by the copy engine in the same run), then 2 ranks sharing the GPU under MPS (ipc),
# verified.
# usage: bench/gpu-step.sh DIR OUT
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-step.sh DIR OUT}" && pwd)
out=${2:?OUT}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
status=0
log() { local name=$1; shift; echo; echo "=== $* (> $name)"; "$@" > "$out/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; tail -n 5 "$out/$name"; }

nvidia-smi -L
log conformance.txt "$dir/cuda-conformance" --test-threads=1
grep -E "stencil|test result" "$out/conformance.txt"
log packbench.txt "$dir/haloport" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64
for round in 1 2; do
    for type in f64 f32; do
        for form in march points; do
            log "stencil-$type-$form-$round.txt" "$dir/haloport" stencil --backend cuda \
                --grid 512x512x512 --type "$type" --steps 20 --exchange-reps 20 \
                --stencil-form "$form" --json "$out/stencil-$type-$form-$round.json"
        done
    done
done

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
# shellcheck disable=SC2086
log stencil-2ranks-ipc.txt mpirun -np 2 $mps "$dir/haloport" stencil --backend cuda \
    --grid 512x512x512 --type f64 --steps 20 --transport ipc --json "$out/stencil-2ranks-ipc.json"
echo quit | nvidia-cuda-mps-control
exit $status
