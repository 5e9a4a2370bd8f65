#!/usr/bin/env bash
# The library's blocking device-direct exchange in one launch (HP_REGIONS_FUSED, issue 23) on one
# GPU, two ranks sharing it under MPS: the GPU test of the library variants (every element
# checked), then the sweep of ipc-tq against lib-base-ipc and lib-tq-ipc with this build, the
# build before the change (BEFORE, two launches per exchange) and this build again, and the
# stencil's blocking exchange between two ranks with no self-neighbour (every message
# device-direct), both builds.
# usage: ci/gpu-one-launch.sh DIR OUT BEFORE   (DIR: haloport and gpu-cuda-cli; BEFORE: a
# haloport binary of the previous build)
set -uo pipefail
dir=$(cd "${1:?usage: ci/gpu-one-launch.sh DIR OUT BEFORE}" && pwd)
out=${2:?OUT}
before=${3:?BEFORE}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN="$dir/haloport" PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
status=0
log() {
    local name=$1; shift
    echo; echo "=== $* (> $name)"
    local t0=$SECONDS
    "$@" > "$out/$name" 2>&1 || { echo "FAILED: $*"; status=1; }
    tail -n 12 "$out/$name"; echo "(took $((SECONDS - t0)) s)"
}

nvidia-smi -L
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
log library-test.txt timeout 180 "$dir/gpu-cuda-cli" --test-threads=1 the_library_variants
i=0
for hp in "$dir/haloport" "$before" "$dir/haloport"; do
    i=$((i + 1))
    name=$([ "$hp" = "$before" ] && echo before || echo after)
    log "sweep-$i-$name.txt" timeout 240 mpirun -np 2 "${mps[@]}" "$hp" sweep --backend cuda \
        --variants ipc-tq,lib-base-ipc,lib-tq-ipc --out "$out/sweep-$i-$name"
    log "stencil-$i-$name.txt" timeout 120 mpirun -np 2 "${mps[@]}" "$hp" stencil --backend cuda \
        --transport ipc --periodic none --procs 2x1x1 --grid 512x256x256 --steps 10 \
        --exchange-reps 50 --json "$out/stencil-$i-$name.json"
done
echo quit | nvidia-cuda-mps-control
exit $status
