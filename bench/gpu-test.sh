#!/usr/bin/env bash
# GPU test suite, run on a machine with NVIDIA GPUs. Builds nothing: it runs the binaries in DIR
# (made by ci/build-gpu-carry.sh): the CUDA conformance suite, the CLI's GPU tests, and a short
# verified baseline run. A missing GPU fails here (HALOPORT_REQUIRE_GPU=1), it is not skipped.
# usage: bench/gpu-test.sh DIR [OUT_DIR]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-test.sh DIR [OUT_DIR]}" && pwd)
out=${2:-.}
mkdir -p "$out"
export HALOPORT_REQUIRE_GPU=1 HALOPORT_BIN="$dir/haloport"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
step() { echo; echo "=== $*"; "$@" || { echo "FAILED: $*"; status=1; }; }
step nvidia-smi -L
step mpirun -np 2 "$dir/haloport" info
step "$dir/cuda-conformance" --test-threads=1 --show-output
step "$dir/gpu-cuda-cli" --test-threads=1 --show-output
step mpirun -np 2 "$dir/haloport" run --backend cuda --variant base-nb-test --workload thesis-9 \
    --runs 3 --json "$out/gpu-smoke.json"
echo
if [ $status -eq 0 ]; then echo "gpu-test: all passed"; else echo "gpu-test: FAILURES above"; fi
exit $status
