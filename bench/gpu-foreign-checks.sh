#!/usr/bin/env bash
# The C ABI's checks that need a GPU, on one GPU (built by ci/build-gpu-carry.sh; this script
# builds nothing): capi-foreign-checks (capi/tests/cuda/foreign_checks.cpp) with the CUDA
# backend, 2 ranks sharing the GPU where ranks meet:
#   contexts    the application makes another context current between haloport's calls (its own
#               context; with a second GPU, that GPU's): halos right, the caller's context back
#   graph       two exchanges captured from C into a graph (IPC), replayed: halos right
#   misaligned  a field of two 4-byte components at 4 mod 8 refused, naming the field
#   host        a host pointer given as a CUDA field refused, naming the field
#   never-free  MPI_Finalize with every handle live: exit 0 on every rank, one line on stderr
# then the per-step times of the CUDA C++ example (carry/cuda-jacobi) beside the same solver
# through the Rust API (carry/app_kernel), both timed from a barrier after a warm-up step to a
# stream synchronize, interleaved, twice: 1 rank, and 2 ranks over IPC.
# Writes OUT/<check>.txt, OUT/times-*.txt and OUT/summary.txt; exits non-zero if a check failed.
# usage: bench/gpu-foreign-checks.sh DIR OUT   (DIR: the carry/ folder; OUT defaults to $OUT)
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-foreign-checks.sh DIR OUT}" && pwd)
out=${2:-${OUT:?usage: bench/gpu-foreign-checks.sh DIR OUT}}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$dir/capi/lib:$dir:${LD_LIBRARY_PATH:-}
# The install's symbolic links, in case the copy to this machine did not keep them.
for link in libhaloport.so libhaloport.so.0.1; do
    [ -e "$dir/capi/lib/$link" ] || ln -sf libhaloport.so.0.1.0 "$dir/capi/lib/$link"
done
summary=$out/summary.txt
: > "$summary"
status=0
nvidia-smi -L | tee "$out/gpu.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$out/gpu.txt" 2>&1

# check NAME NP: runs capi-foreign-checks NAME on NP ranks; passes on exit 0.
check() {
    local name=$1 np=$2
    echo "=== $name on $np rank(s)"
    timeout 300 mpirun --oversubscribe -np "$np" -x LD_LIBRARY_PATH "$dir/capi-foreign-checks" "$name" \
        > "$out/$name.txt" 2> "$out/$name.stderr.txt"
    local rc=$?
    tail -n 6 "$out/$name.txt" "$out/$name.stderr.txt"
    if [ "$rc" -eq 0 ]; then
        echo "PASS $name ($np ranks)" >> "$summary"
    else
        echo "FAIL $name ($np ranks): exit $rc" >> "$summary"
        status=1
    fi
}
check contexts 2
check graph 2
check misaligned 1
check host 1
check never-free 2
if ! grep -q "left to the process's exit" "$out/never-free.stderr.txt"; then
    echo "FAIL never-free: no line on standard error about the exchange left to the exit" >> "$summary"
    status=1
fi

# The examples' time per step, the C ABI's beside the Rust API's, interleaved, twice.
times() {
    local name=$1
    shift
    timeout 300 "$@" > "$out/times-$name.txt" 2>&1 || { echo "FAIL times-$name: exit $?" >> "$summary"; status=1; }
    echo "$name: $(grep -h -o '[0-9.]* us per step' "$out/times-$name.txt" | head -n 1)" |
        tee -a "$summary"
}
for round in 1 2; do
    times "c-1rank-$round" "$dir/cuda-jacobi" --grid 64 48 40 --steps 21
    times "rust-1rank-$round" "$dir/app_kernel" --backend cuda --grid 64x48x40 --steps 21
    times "c-1rank-big-$round" "$dir/cuda-jacobi" --grid 512 256 256 --steps 21
    times "rust-1rank-big-$round" "$dir/app_kernel" --backend cuda --grid 512x256x256 --steps 21
    times "c-2ranks-ipc-$round" mpirun --oversubscribe -np 2 -x LD_LIBRARY_PATH "$dir/cuda-jacobi" \
        --transport ipc --grid 64 48 40 --steps 21
    times "rust-2ranks-ipc-$round" mpirun --oversubscribe -np 2 -x LD_LIBRARY_PATH "$dir/app_kernel" \
        --backend cuda --transport ipc --grid 64x48x40 --steps 21
done
echo
cat "$summary"
exit $status
