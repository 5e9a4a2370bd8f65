#!/usr/bin/env bash
# The Python package on one GPU, from the wheel ci/build-gpu-carry.sh built: the Jacobi example
# on CuPy arrays (1 rank; 2 ranks sharing the GPU under MPS, over ipc and over mpi), beside the
# CUDA C++ example (examples/cuda/jacobi.cu, the same 7-point arithmetic, grids and steps;
# built here with nvcc against carry/capi when both are there), CuPy arrays whose producer
# stream the exchange must wait for, graph capture and device switching
# (python/tests/gpu_cupy_streams.py: 1 rank; 2 ranks over ipc and over mpi), fused mode from
# CuPy (examples/python/fused_cupy.py: 1 rank; 2 ranks under MPS, verified), PyTorch
# tensors on a non-default stream (1 rank; 2 ranks over ipc), the time of one exchange() from
# Python beside the same exchange from Rust (host and CUDA, twice, interleaved;
# bench/python/overhead.py), and the hand-written CuPy + mpi4py exchange beside haloport's
# (2 ranks, mpi and ipc; bench/python/handwritten.py). Needs python3 with CuPy, PyTorch and
# mpi4py (on the machine's OpenMPI); installs nothing outside a temporary folder.
# Outputs: OUT/python/*.txt (one per run, written as it goes), the benchmarks' JSON
# (OUT/python/overhead-*.json, handwritten-*.json: schema haloport-bench/1, bench/README.md;
# rust-*.json: exchange_overhead's own) and OUT/python.tgz of them. About 10 minutes; every
# run has its own time limit.
# usage: bash bench/gpu-python.sh DIR OUT   (DIR: the carry folder, with haloport-*.whl and
#        exchange_overhead; PYTHON: the interpreter with CuPy and PyTorch, default python3)
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-python.sh DIR OUT}" && pwd)
out=${2:?usage: bench/gpu-python.sh DIR OUT}
# This script's folder (bench/, or the carry folder it was copied into, which then holds
# python/ from bench/python), and the repository above it (the examples and tests).
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
[ -f "$repo/examples/python/jacobi.py" ] || repo=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
benches=$here/python
[ -f "$benches/overhead.py" ] || benches=$repo/bench/python
cd "$repo" || exit 1
mkdir -p "$out/python"
logs="$out/python"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$PATH:/usr/local/nvidia/bin"   # where nvidia-cuda-mps-control lives there
status=0
python=${PYTHON:-$(command -v python3)}

# The wheel into a folder of its own on PYTHONPATH: the machine's CuPy, PyTorch and mpi4py stay
# as they are. pip if it can; a wheel is a zip archive otherwise.
site=$(mktemp -d)/site
wheel=$(ls "$dir"/haloport-*.whl 2>/dev/null | head -n1)
if [ -z "$wheel" ]; then
    echo "gpu-python: no haloport-*.whl in $dir (run ci/build-gpu-carry.sh)"; exit 1
fi
"$python" -m pip install -q --no-deps --no-index --target "$site" "$wheel" 2>"$logs/pip.txt" ||
    "$python" -m zipfile -e "$wheel" "$site" || { echo "gpu-python: cannot unpack $wheel"; exit 1; }
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
{
    nvidia-smi -L
    "$python" -c 'import sys, numpy, cupy, torch, mpi4py, haloport
from mpi4py import MPI
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cupy", cupy.__version__,
      "torch", torch.__version__, "mpi4py", mpi4py.__version__, MPI.Get_library_version().split(",")[0])
print("haloport", haloport.__version__, "from", haloport.__file__, "backends:", haloport.backends())'
} 2>&1 | tee "$logs/versions.txt"

# run NAME LIMIT_S COMMAND...: output into NAME.txt; its verdict lines printed here.
run() {
    local name=$1 limit=$2; shift 2
    echo "=== $* (> python/$name.txt)"
    timeout "$limit" "$@" > "$logs/$name.txt" 2>&1 || { echo "FAILED (exit $?): $*"; status=1; }
    grep -E "jacobi.py|fused_cupy.py|PASS|FAIL|ranks \(|verified|MISMATCH|gpu_cupy_streams.py|gpu_torch_stream.py|overhead|exchange\(\)|Exchange::exchange|handwritten.py|Error|error:" "$logs/$name.txt" | head -n 12
}
mpi=(mpirun --bind-to none -x PYTHONPATH)

# The CUDA C++ example, for its time per step beside jacobi.py's (bench/gpu-capi.sh builds it
# the same way).
cexe=
if [ -d "$dir/capi" ] && command -v nvcc > /dev/null; then
    cexe=$logs/cuda-jacobi
    # shellcheck disable=SC2046
    nvcc -O2 -fmad=false -arch=native examples/cuda/jacobi.cu -I"$dir/capi/include" \
        -L"$dir/capi/lib" -lhaloport $(mpicxx --showme:compile) $(mpicxx --showme:link) \
        -o "$cexe" > "$logs/cuda-jacobi-build.txt" 2>&1 || { echo "gpu-python: building jacobi.cu failed (python/cuda-jacobi-build.txt)"; cexe=; }
    export LD_LIBRARY_PATH="$dir/capi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
[ -n "${LD_LIBRARY_PATH:-}" ] && mpi+=(-x LD_LIBRARY_PATH)
small=(--grid 64x48x40 --steps 20)
big=(--grid 512x256x256 --steps 20)

# One rank first (no MPS needed); the Python and C++ examples interleaved, twice.
for round in 1 2; do
    run "jacobi-cupy-1rank-$round" 150 "${mpi[@]}" -np 1 "$python" examples/python/jacobi.py --backend cuda "${small[@]}"
    [ -n "$cexe" ] && run "jacobi-cuda-c-1rank-$round" 150 "${mpi[@]}" -np 1 "$cexe" --grid 64 48 40 --steps 20
    run "jacobi-cupy-1rank-big-$round" 200 "${mpi[@]}" -np 1 "$python" examples/python/jacobi.py --backend cuda "${big[@]}"
    [ -n "$cexe" ] && run "jacobi-cuda-c-1rank-big-$round" 200 "${mpi[@]}" -np 1 "$cexe" --grid 512 256 256 --steps 20
done
# Fused mode from CuPy (a RawKernel including haloport_device.h from haloport.include_dir()).
run fused-cupy-1rank 150 "${mpi[@]}" -np 1 "$python" examples/python/fused_cupy.py
run cupy-streams-1rank 120 "${mpi[@]}" -np 1 "$python" python/tests/gpu_cupy_streams.py
run torch-stream-1rank 120 "${mpi[@]}" -np 1 "$python" python/tests/gpu_torch_stream.py
for round in 1 2; do
    run "overhead-rust-host-$round" 120 "${mpi[@]}" -np 1 "$dir/exchange_overhead" --backend host --json "$logs/rust-host-$round.json"
    run "overhead-python-host-$round" 120 "${mpi[@]}" -np 1 "$python" "$benches/overhead.py" --backend host --rust-json "$logs/rust-host-$round.json" --json "$logs/overhead-host-$round.json"
    run "overhead-rust-cuda-$round" 120 "${mpi[@]}" -np 1 "$dir/exchange_overhead" --backend cuda --json "$logs/rust-cuda-$round.json"
    run "overhead-python-cupy-$round" 120 "${mpi[@]}" -np 1 "$python" "$benches/overhead.py" --backend cuda --rust-json "$logs/rust-cuda-$round.json" --json "$logs/overhead-cupy-$round.json"
done
run overhead-python-torch 120 "${mpi[@]}" -np 1 "$python" "$benches/overhead.py" --backend cuda --arrays torch --rust-json "$logs/rust-cuda-2.json" --json "$logs/overhead-torch.json"

# Two ranks sharing the GPU: MPS lets their kernels run at once.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mpi+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
run jacobi-cupy-2ranks-ipc 150 "${mpi[@]}" -np 2 "$python" examples/python/jacobi.py --backend cuda --transport ipc "${big[@]}"
[ -n "$cexe" ] && run jacobi-cuda-c-2ranks-ipc 150 "${mpi[@]}" -np 2 "$cexe" --transport ipc --grid 512 256 256 --steps 20
run jacobi-cupy-2ranks-mpi 150 "${mpi[@]}" -np 2 "$python" examples/python/jacobi.py --backend cuda --transport mpi "${big[@]}"
[ -n "$cexe" ] && run jacobi-cuda-c-2ranks-mpi 150 "${mpi[@]}" -np 2 "$cexe" --transport mpi --grid 512 256 256 --steps 20
run fused-cupy-2ranks 150 "${mpi[@]}" -np 2 "$python" examples/python/fused_cupy.py
run fused-cupy-2ranks-big 200 "${mpi[@]}" -np 2 "$python" examples/python/fused_cupy.py --grid 512x256x256
run cupy-streams-2ranks-ipc 120 "${mpi[@]}" -np 2 "$python" python/tests/gpu_cupy_streams.py --transport ipc
run cupy-streams-2ranks-mpi 120 "${mpi[@]}" -np 2 "$python" python/tests/gpu_cupy_streams.py --transport mpi
run torch-stream-2ranks-ipc 120 "${mpi[@]}" -np 2 "$python" python/tests/gpu_torch_stream.py --transport ipc
run handwritten-mpi 180 "${mpi[@]}" -np 2 "$python" "$benches/handwritten.py" --transport mpi --json "$logs/handwritten-mpi.json"
run handwritten-ipc 180 "${mpi[@]}" -np 2 "$python" "$benches/handwritten.py" --transport ipc --json "$logs/handwritten-ipc.json"
echo quit | nvidia-cuda-mps-control

tar czf "$out/python.tgz" -C "$out" python
if [ $status -eq 0 ]; then echo "gpu-python: all passed"; else echo "gpu-python: FAILURES above"; fi
exit $status
