#!/usr/bin/env bash
# Two GPUs of one host, one rank per GPU: every two-GPU measurement in one job. Builds nothing
# in Rust: DIR is what ci/build-gpu-carry.sh made (or a folder with its bins.tar.xz, unpacked
# here first); the NCCL peer (bench/nccl-peer.cu) and the CUDA C++ example are compiled here
# with nvcc. Parts, in order (all by default, or those named):
#   sweep     haloport sweep of ipc-base, ipc-tq, lib-base-ipc, lib-tq-ipc and the host-staged
#             variants that were fastest on 2 x H200 (base-nb-wait, base-nb-test-nc, tq-nb-tq)
#             on small, thesis-9, thesis-27 and large, with the barrier, then the device-direct
#             ones back to back (--no-barrier); NCCL's grouped send/recv of the same messages
#             (nccl-peer, OUT/nccl-1.json and nccl-2.json) before and after, in the same job;
#   stencil   haloport stencil --scaling weak (512^3 f64 per GPU) and --scaling strong
#             (1024x512x512) on 1 and 2 GPUs over ipc, with and without --graph: compute alone,
#             exposed exchange and parallel efficiency, every rank count verified;
#   examples  the CUDA C++ example (C ABI), the Python example (CuPy), the Rust app_kernel and
#             haloport stencil on the same grid over 2 GPUs, each verified, time per step;
#   hip       the HIP backend through haloport's HIP-on-CUDA layer beside the CUDA backend, same
#             binary: the device-direct variants and the stencil across the two GPUs;
#   sanitize  compute-sanitizer memcheck and racecheck on the graph mode and on lib-tq-ipc
#             across the two GPUs.
# Every log under OUT (a file per step), a summary at the end; exit 1 if any step failed.
# usage: bench/gpu-two.sh DIR OUT [PART...]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-two.sh DIR OUT [PART...]}" && pwd)
out=${2:?usage: bench/gpu-two.sh DIR OUT [PART...]}
shift 2
parts=${*:-sweep stencil examples hip sanitize}
# This script's folder (bench/, or the carry folder it was copied into), and the repository
# above it (the examples).
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -f "$dir/bins.tar.xz" ] && [ ! -x "$dir/haloport" ]; then
    tar xJf "$dir/bins.tar.xz" -C "$dir" || { echo "gpu-two: cannot unpack $dir/bins.tar.xz"; exit 2; }
fi
hp=$dir/haloport
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export LD_LIBRARY_PATH="$dir:$dir/capi/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mpi=(mpirun --bind-to none -x LD_LIBRARY_PATH -x PATH)
status=0
failed=()
# step NAME LIMIT_S COMMAND...: runs it with a time limit, output to OUT/NAME.log, tail shown.
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    echo; echo "=== $name: $*"
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    tail -n "${TAIL:-8}" "$out/$name.log"
    echo "--- $name: exit $rc, $((SECONDS - t0)) s"
    if [ $rc -ne 0 ]; then status=1; failed+=("$name (exit $rc)"); fi
}
wants() { [[ " $parts " == *" $1 "* ]]; }

{ nvidia-smi -L; nvidia-smi topo -m; } 2>&1 | tee "$out/gpus.txt"
gpus=$(nvidia-smi -L | grep -c '^GPU')
[ "$gpus" -ge 2 ] || echo "gpu-two: only $gpus GPU(s): two ranks share one (correctness only, no speed)"

if wants sweep; then
    peer=$here/nccl-peer.cu
    [ -f "$peer" ] || peer=$repo/bench/nccl-peer.cu
    # shellcheck disable=SC2046 # mpicxx's flags are words of their own
    step nccl-build 120 nvcc -O2 -arch=native "$peer" $(mpicxx --showme:compile) \
        $(mpicxx --showme:link) -lnccl -o /tmp/nccl-peer
    workloads=small,thesis-9,thesis-27,large
    TAIL=12 step nccl-1 180 "${mpi[@]}" -np 2 /tmp/nccl-peer --workloads $workloads --runs 20 \
        --json "$out/nccl-1.json"
    TAIL=30 step sweep-barrier 420 "${mpi[@]}" -np 2 "$hp" sweep --backend cuda \
        --variants ipc-base,ipc-tq,lib-base-ipc,lib-tq-ipc,base-nb-wait,base-nb-test-nc,tq-nb-tq \
        --workloads $workloads --runs 20 --quiet --out "$out/sweep-barrier"
    TAIL=20 step sweep-back-to-back 240 "${mpi[@]}" -np 2 "$hp" sweep --backend cuda \
        --variants ipc-base,ipc-tq,lib-base-ipc,lib-tq-ipc --no-barrier \
        --workloads $workloads --runs 20 --quiet --out "$out/sweep-back-to-back"
    TAIL=12 step nccl-2 180 "${mpi[@]}" -np 2 /tmp/nccl-peer --workloads $workloads --runs 20 \
        --json "$out/nccl-2.json"
fi

if wants stencil; then
    for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        TAIL=14 step "weak-$mode" 300 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda \
            --transport ipc --scaling weak --grid 512x512x512 --steps 20 --exchange-reps 20 \
            "${extra[@]}" --json "$out/weak-$mode.json" --plot "$out/weak-$mode.svg"
        TAIL=14 step "strong-$mode" 300 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda \
            --transport ipc --scaling strong --grid 1024x512x512 --steps 20 --exchange-reps 20 \
            "${extra[@]}" --json "$out/strong-$mode.json" --plot "$out/strong-$mode.svg"
    done
fi

if wants examples; then
    # The examples' grid: large enough to time, small enough for their CPU references.
    grid=(256 256 256)
    for link in libhaloport.so libhaloport.so.0.1; do
        [ -e "$dir/capi/lib/$link" ] || ln -sf libhaloport.so.0.1.0 "$dir/capi/lib/$link"
    done
    # shellcheck disable=SC2046 # mpicxx's flags are words of their own
    step capi-build 180 nvcc -O2 -fmad=false -arch=native "$repo/examples/cuda/jacobi.cu" \
        -I"$dir/capi/include" -L"$dir/capi/lib" -lhaloport $(mpicxx --showme:compile) \
        $(mpicxx --showme:link) -o /tmp/cuda-jacobi
    site=/tmp/haloport-site
    wheel=$(ls "$dir"/haloport-*.whl 2>/dev/null | head -n1)
    step wheel-install 120 python3 -m pip install -q --no-deps --no-index --target "$site" "$wheel"
    for round in 1 2; do
        step "c-example-$round" 240 "${mpi[@]}" -np 2 /tmp/cuda-jacobi --transport ipc \
            --grid "${grid[@]}" --steps 20
        step "python-example-$round" 300 "${mpi[@]}" -x PYTHONPATH="$site" -np 2 python3 \
            "$repo/examples/python/jacobi.py" --backend cuda --transport ipc \
            --grid "$(IFS=x; echo "${grid[*]}")" --steps 20
        step "rust-app-kernel-$round" 240 "${mpi[@]}" -np 2 "$dir/app_kernel" --backend cuda \
            --transport ipc --grid "$(IFS=x; echo "${grid[*]}")" --steps 20
        step "rust-stencil-$round" 240 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda \
            --transport ipc --grid "$(IFS=x; echo "${grid[*]}")" --procs 2x1x1 --steps 20 \
            --exchange-reps 20 --json "$out/rust-stencil-$round.json"
    done
fi

if wants hip; then
    hipnv=$dir/haloport-hipnv
    for b in cuda hip; do
        TAIL=14 step "hip-compare-sweep-$b" 300 "${mpi[@]}" -np 2 "$hipnv" sweep --backend $b \
            --variants ipc-base,ipc-tq,lib-base-ipc,lib-tq-ipc \
            --workloads small,thesis-9,thesis-27,large --runs 10 --quiet --out "$out/hip-compare-$b"
    done
    TAIL=40 step hip-compare 60 "$hipnv" compare "$out/hip-compare-cuda" "$out/hip-compare-hip" \
        --out "$out/hip-compare"
    for b in cuda hip; do
        for mode in plain graph; do
            extra=(); [ $mode = graph ] && extra=(--graph)
            TAIL=10 step "hip-stencil-$b-$mode" 240 "${mpi[@]}" -np 2 "$hipnv" stencil --backend $b \
                --transport ipc --grid 1024x512x512 --procs 2x1x1 --steps 20 --exchange-reps 20 \
                "${extra[@]}" --json "$out/hip-stencil-$b-$mode.json"
        done
    done
fi

if wants sanitize; then
    for tool in memcheck racecheck; do
        san=(compute-sanitizer --tool "$tool" --error-exitcode 9)
        TAIL=6 step "$tool-graph" 300 "${mpi[@]}" -np 2 "${san[@]}" "$hp" stencil --backend cuda \
            --transport ipc --graph --grid 128x64x64 --procs 2x1x1 --fields 2 --steps 6 \
            --exchange-reps 2
        TAIL=6 step "$tool-lib-tq-ipc" 300 "${mpi[@]}" -np 2 "${san[@]}" "$hp" sweep \
            --backend cuda --variants lib-tq-ipc --workloads thesis-4 --runs 1 --iters 4 \
            --warmup 1 --quiet --out "$out/$tool-lib-tq-ipc"
    done
fi

# The per-run files are assembled in sweep.json; keep only that.
rm -rf "$out"/*/cells
echo; echo "=== summary"
grep -h "nccl-peer:" "$out"/nccl-*.log 2>/dev/null || true
for f in "$out"/*/sweep.csv; do
    [ -f "$f" ] && echo "$(basename "$(dirname "$f")"): $(grep -c ',true$' "$f") runs verified, $(grep -c ',false$' "$f") not"
done
grep -hE "verified|MISMATCH|FAILED" "$out"/{weak,strong,c-example,python-example,rust,hip-stencil}-*.log 2>/dev/null | sort | uniq -c | head -20
grep -HE "ERROR SUMMARY|RACECHECK SUMMARY" "$out"/{memcheck,racecheck}-*.log 2>/dev/null || true
if [ $status -eq 0 ]; then echo "gpu-two: all passed"; else echo "gpu-two: FAILED: ${failed[*]}"; fi
exit $status
