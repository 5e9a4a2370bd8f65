#!/usr/bin/env bash
# GPU-aware MPI on one NVIDIA GPU: Open MPI 4.1.4 (Debian's source, carried as
# carry/openmpi_4.1.4.orig.tar.xz) built there with CUDA support, then the release binary in
# carry/ (built against Open MPI 4.1's ABI) run on it: `haloport info` (what MPI says), the
# stencil with every neighbour through MPI from device memory beside host-staged, 2 ranks
# sharing the GPU under MPS, and a routes file putting GPU-aware MPI first between two pretend
# nodes, every run verified. Run from the repository root:
#   bash results/2026-12-06-gpu-aware-mpi-on-one-gpu/run.sh OUT
set -uo pipefail
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1
summary=$out/summary.txt
: > "$summary"
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
    tail -n 4 "$out/$name.txt"
}
prefix=/tmp/ompi-cuda
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
build() {
    mkdir -p /tmp/ompi-build && tar -C /tmp/ompi-build -xJf carry/openmpi_4.1.4.orig.tar.xz &&
        cd /tmp/ompi-build/openmpi-4.1.4 &&
        ./configure --prefix=$prefix --with-cuda="$cuda" --disable-mpi-fortran --disable-oshmem \
            --without-ucx --enable-mca-no-build=btl-uct --disable-man-pages -q &&
        make -j16 -s install
}
[ -x $prefix/bin/mpirun ] || step build-openmpi 420 bash -c "$(declare -f build); prefix=$prefix cuda=$cuda build"
export PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$prefix/lib:${LD_LIBRARY_PATH:-}
ompi_info --parsable --all 2>/dev/null | grep -i "mpi_built_with_cuda_support:value" > "$out/ompi-cuda.txt"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started" >> "$out/gpu.txt"
run2=(mpirun --oversubscribe -np 2 -x PATH -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY)
step info 30 "${run2[@]}" carry/haloport info
grid=(--backend cuda --grid 512x256x256 --type f64 --steps 10 --exchange-reps 20 --timeout 30)
for round in 1 2; do
    for setting in auto off; do
        step "stencil-mpi-$setting-$round" 40 "${run2[@]}" carry/haloport stencil "${grid[@]}" \
            --transport mpi --gpu-aware-mpi "$setting" --json "$out/stencil-mpi-$setting-$round.json"
    done
done
# Two pretend nodes of one rank each, GPU-aware MPI first between them (NCCL, installed here,
# would need a host id per rank on one GPU).
cat > "$out/routes.json" <<'ROUTES'
{"schema": "haloport-routes/1", "within_node": ["ipc", "mpi"], "between_nodes": ["gpu-mpi", "mpi"]}
ROUTES
step stencil-routes-split 40 "${run2[@]}" -x HALOPORT_IPC_RANKS_PER_NODE=1 carry/haloport stencil \
    "${grid[@]}" --routes "$out/routes.json" --json "$out/stencil-routes-split.json"
step info-neighbours 30 "${run2[@]}" -x HALOPORT_IPC_RANKS_PER_NODE=1 carry/haloport info --neighbours \
    --backend cuda --grid 64x64x64 --routes "$out/routes.json"
echo quit | nvidia-cuda-mps-control
cat "$summary"
