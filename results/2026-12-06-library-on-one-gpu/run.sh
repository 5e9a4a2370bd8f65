#!/usr/bin/env bash
# The library on one NVIDIA GPU, from the binaries ci/build-gpu-carry.sh puts in carry/ (plus
# carry/haloport-before, the release build of the commit the comparison starts from), packed as
# carry/all.tar.xz to fit a GPU machine's carry; run from the repository root as
#   bash results/2026-12-06-library-on-one-gpu/run.sh OUT
# What one call of at most 600 s can hold, most needed first: the library's GPU test, the C
# ABI's checks one by one, the Python package's stream/graph check, the three Jacobi examples
# (Python, CUDA C++, Rust) timed in turn, twice; NCCL (smoke, the stencil over nccl beside mpi,
# a dropped message), haloport info, the two builds interleaved (2 rounds), the HIP backend
# through the HIP-on-CUDA layer. No MPS: two ranks time-slice the GPU.
set -uo pipefail
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$PWD/carry:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$out/gpu.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$out/gpu.txt" 2>&1
[ -f carry/all.tar.xz ] && tar -C carry -xJf carry/all.tar.xz
summary=$out/summary-c.txt
: > "$summary"
# One call's worth, most needed first; a step that would end past 570 s is skipped.
step() {
    local name=$1 limit=$2
    shift 2
    if [ $((SECONDS + limit)) -gt 570 ]; then
        echo "$name: skipped (no time left in this call)" | tee -a "$summary"
        return
    fi
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$summary"
    tail -n 3 "$out/$name.txt"
}
step library 60 env HALOPORT_BIN=carry/haloport HALOPORT_REQUIRE_GPU=1 \
    carry/gpu-cuda-library --nocapture
for check in contexts:2 graph:2 misaligned:1 host:1 never-free:2; do
    step "foreign-${check%:*}" 60 mpirun --oversubscribe -np "${check#*:}" \
        -x LD_LIBRARY_PATH=$PWD/carry/capi/lib:$LD_LIBRARY_PATH carry/capi-foreign-checks "${check%:*}"
done
site=$(mktemp -d)/site
python3 -m zipfile -e carry/haloport-*.whl "$site"
step py-streams 90 mpirun -np 1 -x PYTHONPATH="$site" python3 python/tests/gpu_cupy_streams.py
for round in 1 2; do
    step "py-jacobi-$round" 60 mpirun -np 1 -x PYTHONPATH="$site" python3 \
        examples/python/jacobi.py --backend cuda --grid 512x256x256 --steps 20
    step "c-jacobi-$round" 60 env LD_LIBRARY_PATH=$PWD/carry/capi/lib:$LD_LIBRARY_PATH \
        carry/cuda-jacobi --grid 512 256 256 --steps 20
    step "rust-app-kernel-$round" 60 carry/app_kernel --backend cuda --grid 512x256x256 \
        --steps 20
done
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
step nccl-smoke 60 env HALOPORT_NCCL_GPU=1 HALOPORT_NCCL_GPU_SPLIT_HOSTS=1 \
    carry/nccl-gpu-smoke --nocapture
for transport in nccl mpi; do
    step "cuda-stencil-$transport" 60 mpirun --oversubscribe -np 2 -x NCCL_P2P_DISABLE \
        -x NCCL_SHM_DISABLE -x NCCL_NET -x NCCL_SOCKET_IFNAME bash -c \
        'NCCL_HOSTID=rank$OMPI_COMM_WORLD_RANK exec "$0" "$@"' carry/haloport stencil \
        --backend cuda --transport "$transport" --grid 256x128x128 --steps 20 --timeout 20 \
        --json "$out/cuda-stencil-$transport.json"
done
step nccl-drop 40 mpirun --oversubscribe -np 2 -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE \
    -x NCCL_NET -x NCCL_SOCKET_IFNAME bash -c \
    'NCCL_HOSTID=rank$OMPI_COMM_WORLD_RANK exec "$0" "$@"' carry/haloport stencil \
    --backend cuda --transport nccl --grid 64x32x32 --procs 2x1x1 --steps 2 --timeout 2 \
    --inject drop-send=+x
step info 20 mpirun -np 1 carry/haloport info
step compare 200 bash bench/gpu-compare-builds.sh carry/haloport-before carry/haloport \
    "$out/compare" 2
step hip-on-cuda-stencil 40 mpirun --oversubscribe -np 2 -x LD_LIBRARY_PATH \
    carry/haloport-hipnv stencil --backend hip --transport ipc --grid 128x64x64 --type f64 \
    --steps 10
cat "$summary"
