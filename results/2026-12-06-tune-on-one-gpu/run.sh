#!/usr/bin/env bash
# Routes chosen per neighbour on one NVIDIA GPU, 4 ranks sharing it under MPS, groups of 2
# ranks counting as nodes (HALOPORT_IPC_RANKS_PER_NODE=2) and every rank its own NCCL host
# (NCCL_HOSTID, NCCL's socket transport over loopback), from the binaries in carry/ (release,
# cuda): `haloport tune` on a 512x256x256 f64 grid, then the stencil with the routes file it
# wrote beside each single transport, interleaved, 2 rounds, every run verified; `info
# --neighbours`; steps over nccl captured into a graph; the library's GPU test. Run from the repository root:
#   bash results/2026-12-06-tune-on-one-gpu/run.sh OUT
set -uo pipefail
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started" >> "$out/gpu.txt"
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
export HALOPORT_IPC_RANKS_PER_NODE=2
summary=$out/summary.txt
: > "$summary"
step() {
    local name=$1 limit=$2
    shift 2
    if [ $((SECONDS + limit)) -gt 560 ]; then
        echo "$name: skipped (no time left in this call)" | tee -a "$summary"
        return
    fi
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    echo "$name: exit $? in $((SECONDS - t0)) s" | tee -a "$summary"
    tail -n 4 "$out/$name.txt"
}
# 4 ranks, each its own NCCL host, the environment above passed to every rank.
ranks4=(mpirun --oversubscribe -np 4 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY
    -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_NET -x NCCL_SOCKET_IFNAME
    -x HALOPORT_IPC_RANKS_PER_NODE bash -c 'NCCL_HOSTID=rank$OMPI_COMM_WORLD_RANK exec "$0" "$@"'
    carry/haloport)
grid=(--backend cuda --grid 512x256x256 --procs 4x1x1 --type f64 --steps 6 --exchange-reps 20
    --timeout 30)
step info 60 "${ranks4[@]}" info --neighbours "${grid[@]:0:8}"
step tune 300 "${ranks4[@]}" tune "${grid[@]}" --out "$out/routes.json"
for round in 1 2; do
    step "stencil-routes-$round" 40 "${ranks4[@]}" stencil "${grid[@]}" --routes "$out/routes.json" \
        --json "$out/stencil-routes-$round.json"
    for transport in auto ipc nccl mpi; do
        step "stencil-$transport-$round" 40 "${ranks4[@]}" stencil "${grid[@]}" \
            --transport "$transport" --json "$out/stencil-$transport-$round.json"
    done
done
# A step over nccl captured into a CUDA graph and replayed: every neighbour nccl, and auto
# (ipc within a node, nccl between nodes).
for transport in nccl auto; do
    step "graph-$transport" 40 "${ranks4[@]}" stencil "${grid[@]}" --transport "$transport" --graph \
        --json "$out/graph-$transport.json"
done
echo quit | nvidia-cuda-mps-control
unset HALOPORT_IPC_RANKS_PER_NODE
step library 60 env HALOPORT_BIN=carry/haloport HALOPORT_REQUIRE_GPU=1 \
    carry/gpu-cuda-library --nocapture
cat "$summary"
