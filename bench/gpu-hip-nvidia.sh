#!/usr/bin/env bash
# HIP on NVIDIA on one GPU: the HIP backend's own code, run through haloport's
# HIP-on-CUDA layer. Evidence for the backend's code, never for AMD hardware. Builds nothing: DIR
# is what ci/build-gpu-carry.sh made (haloport-hipnv, built with cuda and hip-nvidia;
# hip-nvidia-conformance; libhaloport_hipnv.so, found through LD_LIBRARY_PATH). In order:
#   1. haloport info (the HIP platform named), the HIP conformance suite (HALOPORT_REQUIRE_GPU=1:
#      no GPU fails), and compute-sanitizer memcheck of one rank's HIP taskqueue, library and
#      stencil runs (before MPS starts: the sanitizer does not attach under MPS);
#   2. one rank (ring pattern: the rank is its own neighbour): a sweep of every variant with
#      --backend hip, and the stencil over both transports and both strategies;
#   3. MPS started, two ranks sharing the GPU: the same sweep (pairwise) and the stencil;
#   4. under MPS, the same sweep with --backend cuda and with --backend hip from the same binary,
#      one after the other, then haloport compare of the two (same kernels: build.rs embeds the
#      CUDA fatbin for both, so differences come from the host code and the layer).
# Every log and result under OUT; a summary at the end. usage: bench/gpu-hip-nvidia.sh DIR OUT
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-hip-nvidia.sh DIR OUT}" && pwd)
out=${2:?usage: bench/gpu-hip-nvidia.sh DIR OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
hp="$dir/haloport-hipnv"
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HALOPORT_REQUIRE_GPU=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x HALOPORT_REQUIRE_GPU)
status=0
failed=()
# step NAME LIMIT_S COMMAND...: runs it with a time limit, output to OUT/NAME.log, tail shown.
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    echo; echo "=== $name: $*"
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    tail -n "${TAIL:-15}" "$out/$name.log"
    echo "--- $name: exit $rc, $((SECONDS - t0)) s"
    if [ $rc -ne 0 ]; then status=1; failed+=("$name (exit $rc)"); fi
}

nvidia-smi -L | tee "$out/nvidia-smi.txt"
for f in "$hp" "$dir/hip-nvidia-conformance" "$dir/libhaloport_hipnv.so"; do
    [ -e "$f" ] || { echo "missing $f: run ci/build-gpu-carry.sh"; exit 2; }
done

# 1. Info, conformance, memcheck (no MPS yet).
TAIL=40 step info 60 "${mpi[@]}" -np 1 "$hp" info
# The bindings tests compile against the HIP headers with hipcc, which this machine lacks.
TAIL=12 step conformance 300 "$dir/hip-nvidia-conformance" --test-threads=1 --show-output \
    --skip bindings
grep -E "^test .*(ok|FAILED)$" "$out/conformance.log" | sort | uniq -c | sort -rn | head -5 || true
memcheck=("${mpi[@]}" -np 1 compute-sanitizer --tool memcheck "$hp")
TAIL=6 step memcheck-tq 180 "${memcheck[@]}" run --backend hip --pattern ring \
    --variant tq-nb-tq --workload thesis-4 --runs 1 --iters 4 --warmup 1
TAIL=6 step memcheck-sweep-lib 240 "${memcheck[@]}" sweep --backend hip --pattern ring \
    --variants library --workloads thesis-4 --runs 1 --iters 4 --warmup 1 --quiet \
    --out "$out/memcheck-sweep-lib"
TAIL=6 step memcheck-stencil 180 "${memcheck[@]}" stencil --backend hip --grid 64x64x64 \
    --steps 3 --exchange-reps 2

# 2. One rank: every variant, and the stencil.
TAIL=30 step sweep-1rank 300 "${mpi[@]}" -np 1 "$hp" sweep --backend hip --pattern ring \
    --variants all --workloads small,thesis-9 --runs 3 --quiet --out "$out/sweep-1rank"
for tr in mpi ipc; do
    for v in base tq; do
        step "stencil-1rank-$tr-$v" 120 "${mpi[@]}" -np 1 "$hp" stencil --backend hip \
            --transport $tr --variant $v --grid 128x128x128 --steps 10 --exchange-reps 20 \
            --json "$out/stencil-1rank-$tr-$v.json"
    done
done

# 3. MPS: two ranks share the GPU (without it their persistent kernels time-slice).
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe-hipnv CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log-hipnv
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
mps=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
"$mps" -d && echo "MPS started ($mps)" || { echo "MPS did not start"; status=1; failed+=("mps"); }
trap 'echo quit | "$mps" 2>/dev/null' EXIT
mpi+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
TAIL=30 step sweep-2rank 300 "${mpi[@]}" -np 2 "$hp" sweep --backend hip --variants all \
    --workloads small,thesis-9 --runs 3 --quiet --out "$out/sweep-2rank"
for tr in mpi ipc; do
    for v in base tq; do
        step "stencil-2rank-$tr-$v" 120 "${mpi[@]}" -np 2 "$hp" stencil --backend hip \
            --transport $tr --variant $v --grid 256x128x128 --procs 2x1x1 --steps 10 \
            --exchange-reps 20 --json "$out/stencil-2rank-$tr-$v.json"
    done
done

# 4. The two backends on the same GPU, same binary, same job, then side by side.
for b in cuda hip; do
    TAIL=3 step "compare-sweep-$b" 240 "${mpi[@]}" -np 2 "$hp" sweep --backend $b --variants all \
        --workloads small,thesis-9,thesis-27 --runs 10 --quiet --out "$out/compare-$b"
done
TAIL=80 step compare 60 "$hp" compare "$out/compare-cuda" "$out/compare-hip" --out "$out/compare"

# The per-run files are kept in sweep.json; leave only the assembled results.
rm -rf "$out"/*/cells
echo
echo "=== summary"
grep -h "test result" "$out/conformance.log" || true
for s in sweep-1rank sweep-2rank compare-cuda compare-hip; do
    f="$out/$s/sweep.csv"
    [ -f "$f" ] && echo "$s: $(grep -c ',true$' "$f") runs verified, $(grep -c ',false$' "$f") not"
done
grep -h "ERROR SUMMARY" "$out"/memcheck-*.log || true
if [ $status -eq 0 ]; then
    echo "gpu-hip-nvidia: all passed"
else
    echo "gpu-hip-nvidia: FAILED: ${failed[*]}"
fi
exit $status
