#!/usr/bin/env bash
# Builds, here, everything a GPU machine runs (it has no Rust toolchain): the release binary with
# the cuda feature and the GPU test binaries, copied under stable names into carry/ (git-ignored),
# which the device tool carries along. Needs nvcc (ci/setup.sh installs it into .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
mkdir -p carry
rm -rf carry/*
cargo build --release --features cuda
cp "${CARGO_TARGET_DIR:-target}/release/haloport" carry/haloport
# The example whose update is the application's own kernel on its own stream (NVRTC + cudarc).
cargo build --release --features cuda --example app_kernel
cp "${CARGO_TARGET_DIR:-target}/release/examples/app_kernel" carry/app_kernel
# Test binaries: cargo prints where each one is.
cargo test --release --workspace --features cuda --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, shutil, sys
wanted = {"haloport_cuda": "cuda-conformance", "gpu_cuda": "gpu-cuda-cli"}
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
strip carry/* carry/capi/lib/libhaloport.so.* 2>/dev/null || true
cp ci/gpu-*.sh carry/
ls -la carry
