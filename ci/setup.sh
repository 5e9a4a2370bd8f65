#!/usr/bin/env bash
# Installs what haloport needs to build and test on Debian/Ubuntu: OpenMPI (runtime and headers),
# libclang for bindgen, a C compiler, CMake and gfortran (the C ABI's install and examples), the
# Rust toolchain with rustfmt and clippy, the CUDA compiler (pip wheels, pinned to CUDA 13.0, in
# .venv) that the cuda feature's kernels need, and Debian's hipcc and HIP runtime for the hip
# feature.
# No GPU is needed for any of it. Idempotent: installs only what is missing. Run as root or with
# sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v mpirun >/dev/null 2>&1 || need_apt+=(openmpi-bin)
[ -e /usr/include/x86_64-linux-gnu/openmpi/mpi.h ] || [ -n "$(find /usr/include /usr/lib -name mpi.h -path '*openmpi*' 2>/dev/null | head -n1)" ] || need_apt+=(libopenmpi-dev)
ldconfig -p 2>/dev/null | grep -q 'libclang' || need_apt+=(libclang-dev)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v curl >/dev/null 2>&1 || need_apt+=(curl ca-certificates)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# HIP: the compiler for the kernels and the runtime the hip feature links (no AMD GPU needed).
command -v hipcc >/dev/null 2>&1 || need_apt+=(hipcc)
[ -e /usr/include/hip/hip_runtime_api.h ] || [ -e /opt/rocm/include/hip/hip_runtime_api.h ] || need_apt+=(libamdhip64-dev)
python3 -m venv --help >/dev/null 2>&1 || need_apt+=(python3-venv)
# The C ABI: its CMake install, the Fortran module and examples (mpif90 drives gfortran).
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v gfortran >/dev/null 2>&1 || need_apt+=(gfortran)

if [ ${#need_apt[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "setup: installing ${need_apt[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing the Rust toolchain (rustup)"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
# nvcc 13.0 from pip; nvvm pinned with it, or ptxas rejects the PTX a newer one emits.
nvcc_glob=(.venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
if [ ! -x "${nvcc_glob[0]}" ]; then
    echo "setup: installing the CUDA 13.0 compiler into .venv (pip)"
    [ -d .venv ] || python3 -m venv .venv
    .venv/bin/pip install -q --disable-pip-version-check \
        nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 \
        nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85
    nvcc_glob=(.venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
fi
echo "setup: $(cargo --version), $(mpirun --version 2>/dev/null | head -n1), $("${nvcc_glob[0]}" --version | tail -n1), hipcc at $(command -v hipcc)"
