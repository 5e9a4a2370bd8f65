#!/usr/bin/env bash
# The C ABI on one GPU: the CUDA C++ example (examples/cuda/jacobi.cu: its own kernels, stream,
# cudaMalloc'd fields and Cartesian communicator) built here with nvcc and mpicxx against the
# C ABI installed in DIR/capi (pkg-config), run on 1 rank and on 2 ranks sharing the GPU (mpi,
# ipc), under compute-sanitizer memcheck, and beside the same solver through the Rust API
# (DIR/app_kernel: same kernel arithmetic, grid, periodicity and steps).
# usage: bench/gpu-capi.sh DIR OUT
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-capi.sh DIR OUT}" && pwd)
out=${2:?OUT}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$dir/capi/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=$dir/capi/lib/pkgconfig
export PATH=/usr/local/cuda/bin:$PATH
status=0
log() { local name=$1; shift; echo; echo "=== $* (> $name)"; "$@" > "$out/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; tail -n 4 "$out/$name"; }

nvidia-smi -L
# The install's symbolic links, in case the copy to this machine did not keep them.
for link in libhaloport.so libhaloport.so.0.1; do
    [ -e "$dir/capi/lib/$link" ] || ln -sf libhaloport.so.0.1.0 "$dir/capi/lib/$link"
done
if command -v pkg-config > /dev/null; then
    flags=$(pkg-config --cflags --libs haloport)
else # the .pc file's own values
    flags="-I$dir/capi/include -L$dir/capi/lib -lhaloport"
fi
echo "haloport flags: $flags"
exe=$out/cuda-jacobi
# shellcheck disable=SC2046,SC2086
log build.txt nvcc -O2 -fmad=false -arch=native "$repo/examples/cuda/jacobi.cu" $flags \
    $(mpicxx --showme:compile) $(mpicxx --showme:link) -o "$exe"

grid="--grid 64 48 40 --steps 20"
big="--grid 512 256 256 --steps 20"
# Without MPS first: compute-sanitizer does not attach to MPS clients.
log memcheck-1rank.txt compute-sanitizer --tool memcheck --error-exitcode 9 "$exe" --steps 4
log memcheck-2ranks-ipc.txt mpirun -np 2 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$exe" --transport ipc --steps 4

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x LD_LIBRARY_PATH"
# The C ABI and the Rust API, interleaved, twice.
for round in 1 2; do
    # shellcheck disable=SC2086
    {
        log c-1rank-$round.txt "$exe" $grid
        log rust-1rank-$round.txt "$dir/app_kernel" --backend cuda --grid 64x48x40 --steps 20
        log c-2ranks-mpi-$round.txt mpirun -np 2 $mps "$exe" $grid
        log rust-2ranks-mpi-$round.txt mpirun -np 2 $mps "$dir/app_kernel" --backend cuda --grid 64x48x40 --steps 20
        log c-2ranks-ipc-$round.txt mpirun -np 2 $mps "$exe" --transport ipc $grid
        log rust-2ranks-ipc-$round.txt mpirun -np 2 $mps "$dir/app_kernel" --backend cuda --transport ipc --grid 64x48x40 --steps 20
        log c-2ranks-ipc-big-$round.txt mpirun -np 2 $mps "$exe" --transport ipc $big
        log rust-2ranks-ipc-big-$round.txt mpirun -np 2 $mps "$dir/app_kernel" --backend cuda --transport ipc --grid 512x256x256 --steps 20
    }
done
echo quit | nvidia-cuda-mps-control
rm -f "$exe"
exit $status
