#!/usr/bin/env bash
# One call on 2 x H200: the region table carried in the launch's parameters
# (hp_regions_args.inline_regions) against the table in device memory, interleaved, in
# pack-bench; the SASS of the plain pack (constant-bank loads of the table); CUDA conformance
# (every form with every place of the table); the GPU CLI tests; the library variants, the
# stencil on both transports; compute-sanitizer on launches of both kinds.
set -uo pipefail
out=${1:?usage: call-t.sh OUT}; w="$out/w"; mkdir -p "$w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN=carry/haloport
hp=carry/haloport
pb="$hp pack-bench --backend cuda --local 512x512x512 --halo 1 --reps 50 --runs 11"
step() { echo; echo "=== $*"; local t0=$SECONDS; "$@"; echo "exit code: $? ($((SECONDS - t0)) s)"; }
{
step timeout 150 carry/cuda-conformance --test-threads=1
for round in 1 2; do
    for table in inline memory; do
        flag=; [ $table = memory ] && flag=--table-in-memory
        step timeout 60 $pb --type f64 $flag --json "$w/pack-bench-f64-$table-$round.json"
    done
done
for table in inline memory; do
    flag=; [ $table = memory ] && flag=--table-in-memory
    step timeout 60 $pb --type f64 --elems-per-thread 8 $flag --json "$w/pack-bench-f64-ept8-$table.json"
    step timeout 60 $pb --type f32 $flag --json "$w/pack-bench-f32-$table.json"
    step timeout 60 $pb --type f64 --full-form $flag --json "$w/pack-bench-f64-full-$table.json"
done
step timeout 200 ncu --clock-control none --csv --kernel-name regex:'hp_(un)?pack_regions' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $hp pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 --reps 1 --runs 1 \
    > "$w/ncu-pack-bench-f64.csv"
echo; echo "=== SASS of hp_pack_regions_w8 (sm_90): loads by kind"
cuobjdump -sass -fun hp_pack_regions_w8 $hp > "$w/sass-pack-w8.txt" 2>&1
grep -oE "\b(LDC|LDG|LD|LDS|ULDC)(\.[A-Z0-9.]+)?" "$w/sass-pack-w8.txt" | sort | uniq -c
for a in "mpi base" "ipc base" "ipc tq"; do
    set -- $a
    step timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport $1 --variant $2 \
        --grid 1024x512x512 --procs 2x1x1 --halo 1 --type f64 --steps 30 --exchange-reps 50 \
        --json "$w/stencil-512-per-gpu-$1-$2.json"
done
step timeout 100 mpirun -np 2 $hp stencil --backend cuda --transport ipc --grid 256x256x256 \
    --procs 2x1x1 --halo 2 --type f32 --fields 2 --steps 10 --json "$w/stencil-two-fields.json"
step timeout 150 carry/gpu-cuda-cli --test-threads=1
step timeout 120 mpirun -np 2 $hp sweep --backend cuda \
    --variants lib-base-mpi,lib-tq-mpi,lib-base-ipc,lib-tq-ipc --workloads thesis-9,thesis-27 \
    --runs 3 --quiet --out "$w/sweep"
rm -rf "$w"/sweep/cells
for v in lib-base-ipc lib-tq-ipc; do
    step timeout 120 mpirun -np 2 compute-sanitizer --tool memcheck $hp run --backend cuda \
        --transport ipc --variant $v --workload thesis-4 --runs 1 --iters 6 --warmup 1
done
for flag in "" --table-in-memory; do
    step timeout 120 compute-sanitizer --tool memcheck $hp pack-bench --backend cuda \
        --local 64x48x40 --halo 2 --type f32 --reps 2 --runs 1 $flag
done
} > "$out/t.log" 2>&1
tar czf "$out/t.tar.gz" -C "$w" .
grep -E "test result|FAILED|verified|exit code|6 faces, (un)?pack kernel|step median|exchange of all|ERROR SUMMARY|LDC|LDG|ULDC" "$out/t.log" | head -150
