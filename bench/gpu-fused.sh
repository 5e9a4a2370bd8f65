#!/usr/bin/env bash
# Fused mode on one GPU: the stencil whose boundary update stores the neighbours' halos
# (`haloport stencil --fused`), its CUDA C++ example (examples/cuda/fused.cu, through the C
# ABI), its CuPy example (examples/python/fused_cupy.py), and the HIP backend running the same
# kernels through haloport's HIP-on-CUDA layer.
# Builds nothing: DIR is what ci/build-gpu-carry.sh made. In order:
#   1. MPS started, 2 ranks sharing the GPU: the fused stencil verified over f32 and f64, the
#      7-point stencil with wider halos, --graph, neighbours of both kinds; the examples on 1
#      and 2 ranks;
#   2. speed, 2 ranks of 512x256x256 f64 (ipc), interleaved twice: the ordinary exchange and
#      fused mode, plain and --graph; then the HIP backend beside CUDA from one binary, fused;
#   3. MPS stopped (compute-sanitizer does not attach to MPS clients): memcheck and racecheck
#      of the fused stencil (f64: one launch over the interior; f32: slabs) and of the example
#      on 2 ranks.
# Every log and result under OUT; a summary at the end. PARTS: all (the default), checks (1 and 3)
# or speed (2), so that each fits one call of a time-limited machine.
# usage: bench/gpu-fused.sh DIR OUT [PARTS]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-fused.sh DIR OUT [PARTS]}" && pwd)
out=${2:?usage: bench/gpu-fused.sh DIR OUT [PARTS]}
parts=${3:-all}
mkdir -p "$out"
out=$(cd "$out" && pwd)
hp="$dir/haloport"
export LD_LIBRARY_PATH="$dir:$dir/capi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
    tail -n "${TAIL:-6}" "$out/$name.log"
    echo "--- $name: exit $rc, $((SECONDS - t0)) s"
    if [ $rc -ne 0 ]; then status=1; failed+=("$name (exit $rc)"); fi
}

nvidia-smi -L | tee "$out/nvidia-smi.txt"
for link in libhaloport.so libhaloport.so.0.1; do
    [ -e "$dir/capi/lib/$link" ] || ln -sf libhaloport.so.0.1.0 "$dir/capi/lib/$link"
done
# f64 parts of 32 x 40 x 32: the fused step is one launch over the interior (march tiles).
small=(--grid 64x40x32 --procs 2x1x1 --steps 4 --exchange-reps 2)

checks() { [ "$parts" = all ] || [ "$parts" = checks ]; }
speed() { [ "$parts" = all ] || [ "$parts" = speed ]; }

# 1. MPS: two ranks share the GPU.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe-fused CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log-fused
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
mps=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
"$mps" -d && echo "MPS started ($mps)" || { echo "MPS did not start"; status=1; failed+=("mps"); }
trap 'echo quit | "$mps" 2>/dev/null' EXIT
mpi+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
if checks; then
for type in f32 f64; do
    step "verify-$type" 120 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda --fused --transport ipc \
        --grid 192x96x80 --type "$type" --fields 2 --steps 10 --json "$out/verify-$type.json"
done
step verify-7pt-halo2 120 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda --fused --transport ipc \
    --grid 96x64x48 --stencil 7 --halo 2 --periodic xyz --steps 10 \
    --json "$out/verify-7pt-halo2.json"
step verify-graph 120 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda --fused --graph \
    --transport ipc --grid 192x96x80 --steps 10 --json "$out/verify-graph.json"
# Neighbours of both kinds: 4 ranks as two pretend nodes, ipc within each (stored by the
# boundary kernel), host-staged MPI between them (an ordinary exchange inside fused_finish).
# (Not auto: it would choose NCCL between the pretend nodes, and NCCL refuses two ranks on one
# GPU that share a host id.)
HALOPORT_IPC_RANKS_PER_NODE=2 step verify-two-pretend-nodes 120 "${mpi[@]}" \
    -x HALOPORT_IPC_RANKS_PER_NODE -np 4 "$hp" stencil --backend cuda --fused --transport ipc \
    --grid 256x64x64 --procs 4x1x1 --steps 10 --json "$out/verify-two-pretend-nodes.json"
step verify-1rank 120 "${mpi[@]}" -np 1 "$hp" stencil --backend cuda --fused --grid 128x96x64 \
    --periodic xyz --steps 10 --json "$out/verify-1rank.json"
step example-1rank 120 "${mpi[@]}" -np 1 "$dir/cuda-fused" --steps 20
step example-2ranks 120 "${mpi[@]}" -np 2 "$dir/cuda-fused" --steps 20
# The CuPy example (examples/python/fused_cupy.py) from the wheel, unpacked into a folder of
# its own on PYTHONPATH.
wheel=$(ls "$dir"/haloport-*.whl 2>/dev/null | head -n1)
if [ -n "$wheel" ]; then
    site="$out/site"
    python3 -m zipfile -e "$wheel" "$site"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    repo=$(cd "$(dirname "$0")/.." && pwd)
    step cupy-1rank 150 "${mpi[@]}" -x PYTHONPATH -np 1 python3 "$repo/examples/python/fused_cupy.py"
    step cupy-2ranks 150 "${mpi[@]}" -x PYTHONPATH -np 2 python3 "$repo/examples/python/fused_cupy.py"
    rm -rf "$site"
fi

fi

# 2. Speed: 2 x 512x256x256 f64, the ordinary exchange and fused mode interleaved.
if speed; then
big=(--transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64 --steps 60
    --exchange-reps 20)
for round in $(seq 1 "${ROUNDS:-2}"); do
    for mode in ordinary fused; do
        for graph in plain graph; do
            flags=()
            [ "$mode" = fused ] && flags+=(--fused)
            [ "$graph" = graph ] && flags+=(--graph)
            name="speed-$mode-$graph-$round"
            step "$name" 180 "${mpi[@]}" -np 2 "$hp" stencil --backend cuda "${big[@]}" \
                "${flags[@]}" --json "$out/$name.json"
        done
    done
done
# The HIP backend through the HIP-on-CUDA layer beside CUDA, one binary, fused.
if [ -x "$dir/haloport-hipnv" ] && [ "${HIPNV:-1}" = 1 ]; then
    for round in 1; do
        for backend in cuda hip; do
            name="hipnv-$backend-fused-$round"
            step "$name" 180 "${mpi[@]}" -np 2 "$dir/haloport-hipnv" stencil --backend "$backend" \
                --fused "${big[@]}" --json "$out/$name.json"
        done
    done
fi
fi

echo quit | "$mps" 2>/dev/null
trap - EXIT
sleep 2
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
mpi=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x HALOPORT_REQUIRE_GPU)
# 3. Sanitizers, MPS stopped (compute-sanitizer does not attach to MPS clients).
if checks; then
sanitize=(compute-sanitizer --error-exitcode 9)
step memcheck-stencil-2ranks 300 "${mpi[@]}" -np 2 "${sanitize[@]}" --tool memcheck "$hp" \
    stencil --backend cuda --fused --transport ipc "${small[@]}"
step racecheck-stencil-2ranks 300 "${mpi[@]}" -np 2 "${sanitize[@]}" --tool racecheck "$hp" \
    stencil --backend cuda --fused --transport ipc "${small[@]}"
# f32: the inner box and the boundary's slabs in the point form.
for tool in memcheck racecheck; do
    step "$tool-stencil-f32-2ranks" 300 "${mpi[@]}" -np 2 "${sanitize[@]}" --tool "$tool" "$hp" \
        stencil --backend cuda --fused --transport ipc --type f32 "${small[@]}"
done
step memcheck-example-2ranks 180 "${mpi[@]}" -np 2 "${sanitize[@]}" --tool memcheck \
    "$dir/cuda-fused" --steps 4
step racecheck-example-2ranks 180 "${mpi[@]}" -np 2 "${sanitize[@]}" --tool racecheck \
    "$dir/cuda-fused" --steps 4

fi

echo
echo "=== summary"
grep -h "ERROR SUMMARY" "$out"/memcheck-*.log "$out"/racecheck-*.log || true
grep -l "verified: true" "$out"/*.log | wc -l | sed 's/$/ runs verified/'
python3 - "$out" <<'EOF'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    if "step_median_us" in r:
        rows.append((os.path.basename(f)[:-5], r["verified"], r["step_median_us"],
                     r["compute_median_us"], r["exposed_exchange_us"], r["exchange_median_us"]))
print(f"{'run':28} {'verified':>8} {'step':>8} {'compute':>8} {'exposed':>8} {'exch':>8}  (us)")
for name, ok, step, comp, exp, ex in rows:
    print(f"{name:28} {str(ok):>8} {step:8.1f} {comp:8.1f} {exp:8.1f} {ex:8.1f}")
EOF
# One archive of OUT beside it: a machine may hand back only a few files.
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
if [ $status -eq 0 ]; then
    echo "gpu-fused: all passed"
else
    echo "gpu-fused: FAILED: ${failed[*]}"
fi
exit $status
