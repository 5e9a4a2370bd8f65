#!/usr/bin/env bash
# HIP on NVIDIA without a GPU: builds haloport's HIP-on-CUDA layer (the HIP backend's
# nvidia-layer feature) and runs what needs no GPU:
#   - the layer exports exactly the HIP functions backend-hip/build.rs lists (FUNCTIONS);
#   - its mapping test (backend-hip/nvidia-layer/test_map.cpp) against the built library: every
#     HIP 5.2 error, flag, attribute and copy kind mapped as meant, and no driver or no GPU
#     answered with an error code, never a crash;
#   - its plumbing test (test_layer.cpp) against a stand-in libcuda (fake_cuda.cpp): what each
#     HIP call hands the driver (flags, 3-D copy fields, IPC bytes) and makes of its answers;
#   - haloport-hip's tests with the layer: the conformance suite prints "SKIPPED: no NVIDIA GPU
#     for HIP on NVIDIA" and the backend reports no device cleanly;
#   - clippy (-D warnings) of the hip-nvidia build, and `haloport info` from it naming the
#     platform and reporting no device for hip, without a crash.
# Needs what ci/setup.sh installs (nvcc in .venv, hipcc and the HIP headers).
# usage: ci/hip-nvidia-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
target=${CARGO_TARGET_DIR:-$PWD/target}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The layer is built by haloport-hip's build script; cargo says where.
layer_dir() {
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "backend-hip" in m.get("package_id", ""):
        print(m["out_dir"])
' "$1" | tail -n 1
}
# Every cargo command here selects the same packages with the same features, so that cargo
# resolves their dependencies' features once and compiles them once. The test build runs the
# build script too: one build gives the layer and the tests.
select=(-p haloport-hip -p haloport -p haloport-cli --features haloport-cli/hip-nvidia)
cargo test "${select[@]}" --lib --no-run
cargo test "${select[@]}" --lib --no-run --message-format=json > "$tmp/build.json"
out_dir=$(layer_dir "$tmp/build.json")
lib="$out_dir/libhaloport_hipnv.so"
[ -f "$lib" ] || { echo "hip-nvidia-test: no layer at $lib"; exit 1; }
echo "layer: $lib"

expected=$(sed -n '/^const FUNCTIONS/,/^];/p' backend-hip/build.rs | grep -o '"hip[A-Za-z0-9]*"' |
    tr -d '"' | sort)
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
if [ "$expected" != "$exported" ]; then
    echo "hip-nvidia-test: the layer's exports differ from build.rs's FUNCTIONS"
    echo "(< listed, > exported):"
    diff <(echo "$expected") <(echo "$exported") || true
    exit 1
fi
echo "layer exports exactly the $(echo "$exported" | wc -l) functions build.rs lists"

nvcc=${NVCC:-$(ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc 2>/dev/null | head -n 1)}
[ -x "$nvcc" ] || { echo "hip-nvidia-test: no nvcc (bash ci/setup.sh installs it)"; exit 1; }
"$nvcc" -std=c++17 -cudart none -Xcompiler -Wall,-Wextra,-Werror -I backend-hip/nvidia-layer \
    -x c++ backend-hip/nvidia-layer/test_map.cpp -o "$tmp/test_map" \
    -L "$out_dir" -lhaloport_hipnv -Xlinker -rpath="$out_dir"
"$tmp/test_map"
# The layer's plumbing against a stand-in libcuda.so.1 (fake_cuda.cpp): what each call hands
# the driver and makes of its answer.
mkdir -p "$tmp/fake"
"$nvcc" -std=c++17 -shared -cudart none -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra,-Werror \
    -x c++ backend-hip/nvidia-layer/fake_cuda.cpp -o "$tmp/fake/libcuda.so.1"
"$nvcc" -std=c++17 -cudart none -Xcompiler -Wall,-Wextra,-Werror -I backend-hip/nvidia-layer \
    -x c++ backend-hip/nvidia-layer/test_layer.cpp -o "$tmp/test_layer" \
    -L "$out_dir" -lhaloport_hipnv -ldl
LD_LIBRARY_PATH="$tmp/fake:$out_dir" "$tmp/test_layer"

cargo test "${select[@]}" --lib -- --show-output
cargo clippy "${select[@]}" --all-targets -- -D warnings

# A binary linking the layer finds it on LD_LIBRARY_PATH (cargo run and cargo test set it).
cargo build "${select[@]}"
cargo build "${select[@]}" --message-format=json > "$tmp/build-bin.json"
LD_LIBRARY_PATH="$(layer_dir "$tmp/build-bin.json")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    mpirun -np 1 -x LD_LIBRARY_PATH "$target/debug/haloport" info | tee "$tmp/info.txt"
grep -q "HIP platform: HIP on NVIDIA through haloport's HIP-on-CUDA layer" "$tmp/info.txt"
grep -Eq "^  hip: hip: no device: .*(hipErrorInsufficientDriver|hipErrorNoDevice)" "$tmp/info.txt"
echo "hip-nvidia-test: passed"
