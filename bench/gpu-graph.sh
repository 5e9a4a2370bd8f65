#!/usr/bin/env bash
# CUDA graphs and the stencil step on one GPU:
#   1. the CLI test of graph mode (capture, plain steps, replays that move the epochs on, the
#      refusal of host-staged neighbours), verified bit for bit;
#   2. compute-sanitizer memcheck and racecheck on graph mode, 2 ranks sharing the GPU over ipc
#      (without MPS: the sanitizer does not attach under it);
#   3. under MPS: haloport stencil 512^3, f64 and f32, with and without --graph, twice
#      interleaved, each beside its compute alone and a copy of the fields in the same run,
#      then 2 ranks over ipc with and without --graph;
#   4. under MPS: the sweep of ipc-tq against lib-base-ipc and lib-tq-ipc, 2 ranks;
#   5. when DIR holds them (ci/build-gpu-carry.sh's HIP-on-NVIDIA files): the HIP conformance
#      suite (a captured HIP graph replayed on two streams among it) and haloport stencil
#      --backend hip --graph, verified.
# usage: bench/gpu-graph.sh DIR OUT [quick]   (DIR: haloport, gpu-cuda-cli and cuda-conformance
# built with the cuda feature, or bins.tar.xz holding them; quick: 1 and 2, then one pass of
# 512^3 f64 with and without --graph)
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-graph.sh DIR OUT}" && pwd)
out=${2:?OUT}
mkdir -p "$out"
if [ -f "$dir/bins.tar.xz" ]; then
    mkdir -p /tmp/gpu-graph-bins && tar xJf "$dir/bins.tar.xz" -C /tmp/gpu-graph-bins
    dir=/tmp/gpu-graph-bins
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN="$dir/haloport" PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin"
hp="$dir/haloport"
status=0
log() {
    local name=$1; shift
    echo; echo "=== $* (> $name)"
    local t0=$SECONDS
    "$@" > "$out/$name" 2>&1 || { echo "FAILED: $*"; status=1; }
    tail -n 4 "$out/$name"; echo "(took $((SECONDS - t0)) s)"
}

nvidia-smi -L
[ -x "$dir/cuda-conformance" ] && log conformance.txt "$dir/cuda-conformance" --test-threads=1
log graph-test.txt timeout 180 "$dir/gpu-cuda-cli" --test-threads=1 the_stencil_replays
small=(stencil --backend cuda --graph --transport ipc --grid 64x48x40 --fields 2 --steps 6)
for tool in memcheck racecheck; do
    log "sanitizer-$tool.txt" timeout 300 mpirun -np 2 compute-sanitizer --tool "$tool" \
        --error-exitcode 9 "$hp" "${small[@]}"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|verified" "$out/sanitizer-$tool.txt"
done

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
rounds=(1 2) types=(f64 f32)
[ "${3:-}" = quick ] && rounds=(1) types=(f64)
for round in "${rounds[@]}"; do
    for type in "${types[@]}"; do
        for mode in plain graph; do
            extra=()
            [ $mode = graph ] && extra=(--graph)
            log "stencil-$type-$mode-$round.txt" timeout 120 "$hp" stencil --backend cuda \
                --grid 512x512x512 --type "$type" --steps 20 --exchange-reps 20 "${extra[@]}" \
                --json "$out/stencil-$type-$mode-$round.json"
        done
    done
done
[ "${3:-}" = quick ] && { echo quit | nvidia-cuda-mps-control; exit $status; }
for mode in plain graph; do
    extra=()
    [ $mode = graph ] && extra=(--graph)
    log "stencil-2ranks-ipc-$mode.txt" timeout 180 mpirun -np 2 "${mps[@]}" "$hp" stencil \
        --backend cuda --grid 512x512x512 --type f64 --steps 20 --transport ipc "${extra[@]}" \
        --json "$out/stencil-2ranks-ipc-$mode.json"
done
log sweep.txt timeout 300 mpirun -np 2 "${mps[@]}" "$hp" sweep --backend cuda \
    --variants ipc-tq,lib-base-ipc,lib-tq-ipc --out "$out/sweep"
echo quit | nvidia-cuda-mps-control
if [ -x "$dir/hip-nvidia-conformance" ]; then
    export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    log hip-conformance.txt timeout 300 "$dir/hip-nvidia-conformance" --test-threads=1 \
        --skip bindings
    log hip-stencil-graph.txt timeout 120 "$dir/haloport-hipnv" stencil --backend hip --graph \
        --grid 128x96x80 --type f64 --fields 2 --steps 7
fi
exit $status
