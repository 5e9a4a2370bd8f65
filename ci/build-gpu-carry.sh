#!/usr/bin/env bash
# Builds, here, everything a GPU machine runs (it has no Rust toolchain): the release binary with
# the cuda feature and the GPU test binaries, copied under stable names into carry/ (git-ignored),
# the folder to copy to the GPU machine. Needs nvcc (ci/setup.sh installs it into .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p carry
rm -rf carry/*
# built NAME CARGO_ARGS...: builds and copies target NAME's executable into carry/, from the path
# cargo reports (target/release/NAME may still be a build with other features: cargo does not
# copy a binary up there again when it finds it fresh).
built() {
    local name=$1
    shift
    cargo build "$@"
    cargo build "$@" --message-format=json 2>/dev/null | python3 -c '
import json, shutil, sys
name = sys.argv[1]
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("executable") and msg.get("target", {}).get("name") == name:
        shutil.copy(msg["executable"], "carry/" + name)
        print("carry/" + name)
' "$name"
    [ -f "carry/$name" ] || { echo "build-gpu-carry: carry/$name was not built"; exit 1; }
}
built haloport --release --features cuda
# The example whose update is the application's own kernel on its own stream (NVRTC + cudarc).
built app_kernel --release --features cuda --example app_kernel
# Test binaries: cargo prints where each one is.
cargo test --release --workspace --features cuda --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, shutil, sys
wanted = {"haloport_cuda": "cuda-conformance", "gpu_cuda": "gpu-cuda-cli",
          "gpu_cuda_library": "gpu-cuda-library", "gpu_nccl": "nccl-gpu-smoke"}
for line in sys.stdin:
    msg = json.loads(line)
    exe = msg.get("executable")
    name = msg.get("target", {}).get("name")
    if exe and name in wanted:
        shutil.copy(exe, "carry/" + wanted[name])
        print("carry/" + wanted[name])
'
# The C ABI with the CUDA backend, installed as the README says (the static library stays
# behind: the examples link the shared one).
cmake -S capi -B build/capi-gpu -DHALOPORT_FEATURES=host,cuda \
    -DHALOPORT_CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" > /dev/null
cmake --build build/capi-gpu
cmake --install build/capi-gpu --prefix carry/capi > /dev/null
rm -f carry/capi/lib/libhaloport.a
# The C ABI's GPU checks (bench/gpu-foreign-checks.sh runs them): the driver API from libcuda at
# run time, so no CUDA toolkit is linked. And the CUDA C++ example, its own kernels built for the
# A100, H100 and H200, the CUDA runtime linked statically.
mpicxx -std=c++17 -O2 -Wall -Wextra -Werror -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX \
    capi/tests/cuda/foreign_checks.cpp -Icarry/capi/include -Lcarry/capi/lib -lhaloport -ldl \
    -o carry/capi-foreign-checks
nvcc_bin=(.venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
cuda_lib=(.venv/lib/python3*/site-packages/nvidia/cu13/lib)
# shellcheck disable=SC2046 # the MPI wrapper's flags are lists
"${nvcc_bin[0]}" -O2 -fmad=false -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_90,"code=[sm_90,compute_90]" examples/cuda/jacobi.cu -Icarry/capi/include \
    -Lcarry/capi/lib -lhaloport -L"${cuda_lib[0]}" $(mpicxx --showme:compile) $(mpicxx --showme:link) \
    -o carry/cuda-jacobi
# The same for fused mode's example (its boundary kernel stores into the neighbours' halos
# through haloport_device.h, installed beside haloport.h).
# shellcheck disable=SC2046
"${nvcc_bin[0]}" -O2 -fmad=false -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_90,"code=[sm_90,compute_90]" examples/cuda/fused.cu -Icarry/capi/include \
    -Lcarry/capi/lib -lhaloport -L"${cuda_lib[0]}" $(mpicxx --showme:compile) $(mpicxx --showme:link) \
    -o carry/cuda-fused
strip carry/* carry/capi/lib/libhaloport.so.* 2>/dev/null || true
# The Python package with the cuda feature, an abi3 wheel for bench/gpu-python.sh to install, and
# the Rust side of its overhead benchmark (python/README.md, bench/python/overhead.py).
MATURIN_PEP517_ARGS="--features cuda" .venv/bin/python -m pip wheel -q --disable-pip-version-check \
    --no-deps -w carry ./python
built exchange_overhead --release -p haloport-python --features haloport-python/cuda \
    --example exchange_overhead
strip carry/exchange_overhead
# HIP on NVIDIA (bench/gpu-hip-nvidia.sh): a second binary with the cuda and hip-nvidia
# features (the HIP backend on haloport's HIP-on-CUDA layer; both backends in one binary, so the
# cross-backend compare runs the same host code), the HIP conformance suite built the same way,
# and the layer itself (libhaloport_hipnv.so; the script puts carry/ on LD_LIBRARY_PATH).
(
    cargo build --release --features cuda,hip-nvidia
    cargo build --release --features cuda,hip-nvidia --message-format=json 2>/dev/null |
        python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "backend-hip" in m.get("package_id", ""):
        shutil.copy(m["out_dir"] + "/libhaloport_hipnv.so", "carry/libhaloport_hipnv.so")
    if m.get("executable") and m.get("target", {}).get("name") == "haloport":
        shutil.copy(m["executable"], "carry/haloport-hipnv")
'
    cargo test --release -p haloport-hip --features nvidia-layer --no-run
    cargo test --release -p haloport-hip --features nvidia-layer --no-run --message-format=json \
        2>/dev/null | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m.get("target", {}).get("name") == "haloport_hip":
        shutil.copy(m["executable"], "carry/hip-nvidia-conformance")
'
    for f in haloport-hipnv hip-nvidia-conformance libhaloport_hipnv.so; do
        [ -f "carry/$f" ] || { echo "build-gpu-carry: carry/$f was not built"; exit 1; }
        strip "carry/$f"
    done
)
# The benchmark drivers beside the binaries (bench/README.md): the GPU job scripts, the NCCL
# peer that gpu-two.sh compiles there, and the Python benchmarks gpu-python.sh runs (carry/python).
cp bench/gpu-*.sh bench/nccl-peer.cu carry/
mkdir -p carry/python
cp bench/python/*.py carry/python/
ls -la carry
