#!/usr/bin/env bash
# Call 7: f64 512^3 on one rank without overlap (--overlap auto), fields placed for the tiles
# (the default) or for the interior, rows of 516 and 514, plain and --graph, two rounds, under
# MPS. This directory's commit (call 6's binaries). It ran as the device tool's command line
# itself; its output is in f64-placement-log.txt (the lines it printed, cut at 170 columns).
# usage, from the repository root: bash results/2026-11-29-h200-issue23-final/run-f64-placement.sh BINDIR
tar xJf "$1/bins.tar.xz" -C /tmp
export CUDA_VISIBLE_DEVICES=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p /tmp/mps-pipe /tmp/mps-log; nvidia-cuda-mps-control -d; nvidia-smi -L
for r in 1 2; do for pl in tiles interior; do for pad in 2,0,0 0,0,0; do for g in "" --graph; do
    echo "=== f64 pad $pad $pl $g round $r"
    mpirun -np 1 -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES \
        /tmp/haloport stencil --backend cuda --grid 512x512x512 --type f64 --pad $pad \
        --placement $pl $g --steps 20 --exchange-reps 10 |
        grep -E "step median|compute alone|verified" | cut -c1-170
done; done; done; done
echo quit | nvidia-cuda-mps-control
