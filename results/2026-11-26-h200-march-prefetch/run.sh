#!/usr/bin/env bash
# The commands of the three runs (one call each), BINDIR holding the benches built as their
# headers say. usage, from the repository root: bash run.sh BINDIR OUT
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
nvidia-smi -L
"$bin/prefetch_bench" 512 15 | tee "$out/prefetch_bench.csv"
ncu -k regex:"hp_stencil27_march64|hp_stencil27_marching" --launch-skip 2 --launch-count 2 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$bin/prefetch_bench" 512 3 2>&1 | tail -60 | tee "$out/ncu.txt"
"$bin/order_bench" 512 15 | tee "$out/order_bench.csv"
