#!/usr/bin/env bash
# Where a fused step's time goes: every kernel of the fused step, and of the ordinary step with
# its shell in launches of their own (the same boxes, no stores into neighbours), timed alone
# under Nsight Compute. One rank, so every neighbour is the rank itself: serialized, the signal
# kernel waits only for its own stores and cannot deadlock (with two ranks it would wait for a
# neighbour that cannot run). Then the same two steps timed on 2 ranks under MPS, unprofiled.
# Builds nothing: DIR is what ci/build-gpu-carry.sh made. Output in OUT and OUT.tar.gz.
# usage: bench/gpu-fused-profile.sh DIR OUT
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-fused-profile.sh DIR OUT}" && pwd)
out=${2:?usage: bench/gpu-fused-profile.sh DIR OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi -L | tee "$out/nvidia-smi.txt"
one=(--backend cuda --grid 512x256x256 --type f64 --steps 6 --exchange-reps 2 --overlap on)
for mode in fused shell-launches; do
    timeout 120 mpirun --allow-run-as-root -np 1 ncu --metrics gpu__time_duration.sum \
        --launch-skip 40 --launch-count 24 "$dir/haloport" stencil "${one[@]}" "--$mode" \
        > "$out/ncu-$mode.log" 2>&1
    echo "ncu $mode: exit $?"
    grep -E "^  hp_|gpu__time_duration" "$out/ncu-$mode.log" |
        awk '/^  hp_/ {k = $1} /gpu__time/ {print k, $NF, $(NF-1)}' | tee "$out/ncu-$mode.txt"
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe-prof CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log-prof
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control 2>/dev/null' EXIT
two=(--backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64 --steps 60
    --exchange-reps 20)
for mode in fused shell-launches; do
    timeout 120 mpirun --allow-run-as-root -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
        -np 2 "$dir/haloport" stencil "${two[@]}" "--$mode" --json "$out/two-$mode.json" \
        > "$out/two-$mode.log" 2>&1
    echo "2 ranks $mode: exit $?"
    grep -E "step median|compute alone|verified" "$out/two-$mode.log"
done
tar czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
