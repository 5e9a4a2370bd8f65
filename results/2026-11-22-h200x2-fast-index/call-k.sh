#!/usr/bin/env bash
# One call on 2 x H200: the region kernels with the 32-bit index rule dividing by magic numbers
# (and no local-memory pointer arrays in the paired mover); pack-bench now checks the 6-face
# kernels element by element and times them cold too. CUDA conformance; pack-bench over threads
# per block and elements per thread; Nsight Compute's DRAM bytes for every region launch of one
# pack-bench; the stencil at 512^3 per GPU; the library variants beside the ipc ones.
set -uo pipefail
out=${1:?usage: call-k.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=carry/haloport
hp=carry/haloport
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
pb="$hp pack-bench --backend cuda --local 512x512x512 --halo 1"
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,ecc.mode.current --format=csv
step timeout 150 carry/cuda-conformance --test-threads=1
step timeout 60 $pb --type f64 --reps 50 --runs 11 --json "$w/pack-bench-f64-t256-ept4.json"
step timeout 200 ncu --clock-control none --csv --kernel-name regex:'hp_(un)?pack_regions' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $hp pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 --reps 1 --runs 1 \
    > "$w/ncu-pack-bench-f64.csv"
head -c 600 "$w/ncu-pack-bench-f64.csv"; echo; wc -l "$w/ncu-pack-bench-f64.csv"
for a in "mpi base 256" "ipc tq 256" "ipc base 256" "ipc tq 1024" "ipc base 1024"; do
    set -- $a
    step timeout 120 mpirun -np 2 $hp stencil --backend cuda --transport $1 --variant $2 \
        --threads $3 --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 \
        --exchange-reps 50 --json "$w/stencil-512-per-gpu-$1-$2-t$3.json"
done
for t in 256 1024; do
    for ept in 4 8 16; do
        [ "$t/$ept" = 256/4 ] && continue
        step timeout 60 $pb --type f64 --threads $t --elems-per-thread $ept --reps 50 --runs 11 \
            --json "$w/pack-bench-f64-t$t-ept$ept.json"
    done
done
step timeout 60 $pb --type f32 --reps 50 --runs 11 --json "$w/pack-bench-f32-t256-ept4.json"
step timeout 120 mpirun -np 2 $hp sweep --backend cuda \
    --variants ipc-base,ipc-tq,lib-base-ipc,lib-tq-ipc --workloads small,thesis-9,thesis-27 \
    --runs 10 --quiet --out "$w/sweep"
rm -rf "$w"/sweep/cells
step timeout 100 carry/gpu-cuda-cli --test-threads=1 the_stencil both_ipc
} > "$out/k.log" 2>&1
tar czf "$out/k.tar.gz" -C "$w" .
grep -E "test result|FAILED|verified|exit code|6 faces|contiguous|step median|exchange of all|device copy" "$out/k.log" | head -120
