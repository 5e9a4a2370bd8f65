#!/usr/bin/env bash
# One call on 2 x H200: the plain form of the region kernels (hp_{pack|unpack}_regions_w4/_w8,
# 32 registers against 64, for tables without messages or synthetic regions) against the full
# form, interleaved, in pack-bench; CUDA conformance (both forms); the stencil on both transports.
set -uo pipefail
out=${1:?usage: call-p.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=carry/haloport
hp=carry/haloport
pb="$hp pack-bench --backend cuda --local 512x512x512 --halo 1 --reps 50 --runs 11"
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
step timeout 150 carry/cuda-conformance --test-threads=1
for round in 1 2; do
    for form in chosen full; do
        flag=; [ $form = full ] && flag=--full-form
        step timeout 60 $pb --type f64 $flag --json "$w/pack-bench-f64-$form-$round.json"
    done
done
step timeout 60 $pb --type f64 --elems-per-thread 8 --json "$w/pack-bench-f64-chosen-ept8.json"
step timeout 60 $pb --type f32 --json "$w/pack-bench-f32-chosen.json"
step timeout 60 $pb --type f32 --full-form --json "$w/pack-bench-f32-full.json"
step timeout 200 ncu --clock-control none --csv --kernel-name regex:'hp_(un)?pack_regions' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $hp pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 --reps 1 --runs 1 \
    > "$w/ncu-pack-bench-f64.csv"
for a in "mpi base" "ipc base"; do
    set -- $a
    step timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport $1 --variant $2 \
        --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$w/stencil-512-per-gpu-$1-$2.json"
done
step timeout 100 carry/gpu-cuda-cli --test-threads=1 the_stencil
} > "$out/p.log" 2>&1
tar czf "$out/p.tar.gz" -C "$w" .
grep -E "test result|FAILED|verified|exit code|6 faces, (un)?pack kernel|step median|exchange of all|form," "$out/p.log" | head -120
