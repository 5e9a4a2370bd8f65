#!/usr/bin/env bash
# Kernel times of the fused step under Nsight Compute (kernels serialized: the signal kernel waits for a neighbour that cannot run, so only the first launches are timed).
d=$(cd "$(dirname "$0")" && pwd); L=$OUT/log3.txt
export LD_LIBRARY_PATH="$d" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 80 mpirun --allow-run-as-root -x LD_LIBRARY_PATH -np 2 ncu --target-processes all --metrics gpu__time_duration.sum --launch-skip 60 --launch-count 40 $d/haloport stencil --backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --steps 8 --exchange-reps 2 --fused > $L 2>&1
grep -E "hp_[a-z0-9_]+|gpu__time_duration|step median|verified" $L | head -150 > $OUT/short3.txt
