#!/usr/bin/env bash
# Interoperation with the application's own CUDA code on one GPU: the CUDA conformance suite
# (64-bit epochs in the region kernels), the app_kernel example (the application's own NVRTC
# kernel on its own cudarc stream) on 1 rank and 2 ranks sharing the GPU, compute-sanitizer
# memcheck on it, and pack-bench and the stencil with BEFORE_BIN (another build of haloport,
# e.g. the previous commit's) and with DIR's, interleaved.
# usage: bench/gpu-interop.sh DIR OUT [BEFORE_BIN]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-interop.sh DIR OUT [BEFORE_BIN]}" && pwd)
out=${2:?OUT}
before=${3:-}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0
step() { echo; echo "=== $*"; "$@" || { echo "FAILED: $*"; status=1; }; }
log() { local name=$1; shift; echo; echo "=== $* (> $name)"; "$@" > "$out/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; tail -n 4 "$out/$name"; }

step nvidia-smi -L
log conformance.txt "$dir/cuda-conformance" --test-threads=1
grep -E "test result|FAILED" "$out/conformance.txt"

# Without MPS: compute-sanitizer does not attach to MPS clients.
app="$dir/app_kernel"
log app-1rank.txt "$app" --backend cuda --grid 64x48x40 --steps 20
log app-memcheck-1rank.txt compute-sanitizer --tool memcheck --error-exitcode 9 "$app" --backend cuda --steps 4
log app-memcheck-2ranks-ipc.txt mpirun -np 2 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$app" --backend cuda --transport ipc --steps 4

# MPS: two ranks sharing the GPU run their kernels at once.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x LD_LIBRARY_PATH"
log app-2ranks-mpi.txt mpirun -np 2 $mps "$app" --backend cuda --grid 64x48x40 --steps 20
log app-2ranks-ipc.txt mpirun -np 2 $mps "$app" --backend cuda --transport ipc --grid 64x48x40 --steps 20
log app-2ranks-ipc-256.txt mpirun -np 2 $mps "$app" --backend cuda --transport ipc --grid 512x256x256 --steps 20

# Before and after, interleaved: pack-bench 512^3 f64 and the stencil on 1 rank and 2 ranks.
for round in 1 2; do
    for which in before after; do
        bin="$dir/haloport"
        [ "$which" = before ] && bin=$before
        [ -n "$bin" ] || continue
        log "packbench-$which-$round.txt" "$bin" pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64
        log "stencil-1rank-$which-$round.txt" "$bin" stencil --backend cuda --grid 512x512x512 --halo 1 \
            --type f64 --steps 20 --exchange-reps 20
        log "stencil-2ranks-ipc-$which-$round.txt" mpirun -np 2 $mps "$bin" stencil --backend cuda \
            --grid 512x256x256 --procs 2x1x1 --halo 1 --type f64 --steps 20 --transport ipc --variant tq
    done
done
echo quit | nvidia-cuda-mps-control
echo
if [ $status -eq 0 ]; then echo "gpu-interop: all passed"; else echo "gpu-interop: FAILURES above"; fi
exit $status
