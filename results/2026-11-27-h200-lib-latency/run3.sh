#!/usr/bin/env bash
# Issue 23, call 3: the build whose one launch raises a done word per grid block (haloport),
# the host reading them all, against the build before it (haloport-base, b48e70c, whose blocks
# count in device memory and the last raises one word): CUDA conformance, the HIP backend
# through the HIP-on-CUDA layer (less the two binding checks that need hipcc), the CLI's GPU
# tests, compute-sanitizer memcheck and racecheck of lib-tq-ipc and of the 2-rank stencil, a
# dropped message, and under MPS the sweep of ipc-tq and lib-tq-ipc, 2 ranks, three rounds, and
# 2 ranks of 1024x512x512 f64 over ipc, two rounds, builds interleaved; then 512^3 f64 on 1
# rank, and ncu's duration of each stencil kernel of a few steps of it.
# usage, from the repository root: bash results/2026-11-27-h200-lib-latency/run3.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport, haloport-base, cuda-conformance,
#   gpu-cuda-cli, hip-nvidia-conformance, libhaloport_hipnv.so. Everything is written under
#   OUT/job and packed into OUT/job.tgz.
set -uo pipefail
dir=$(cd "$1" && pwd); top=$2; out=$top/job; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/lat-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="$PATH:/usr/local/nvidia/bin:/usr/local/cuda/bin" CUDA_VISIBLE_DEVICES=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$out/log.txt") 2>&1
date -u; nvidia-smi -L
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "verified|SUMMARY|test result|FAILED|panicked|error|timed out" "$out/$1.txt" | head -8
}
step conformance 200 $bin/cuda-conformance --test-threads=1; show conformance
LD_LIBRARY_PATH=$bin step hip-conformance 200 $bin/hip-nvidia-conformance --test-threads=1 \
    --skip bindings
show hip-conformance
HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
for tool in memcheck racecheck; do
    step sanitize-lib-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
        --tool $tool --error-exitcode 9 $bin/haloport run --backend cuda --transport ipc \
        --variant lib-tq-ipc --workload thesis-9 --pattern mixed --runs 2 --iters 3 --warmup 1 \
        --verify full
    show sanitize-lib-$tool
    step sanitize-stencil-$tool 200 mpirun -np 2 -x CUDA_VISIBLE_DEVICES compute-sanitizer \
        --tool $tool --error-exitcode 9 $bin/haloport stencil --backend cuda --transport ipc \
        --grid 128x64x64 --procs 2x1x1 --periodic x --steps 6 --exchange-reps 2
    show sanitize-stencil-$tool
done
step drop-send 120 mpirun -np 2 $bin/haloport run --backend cuda --transport ipc \
    --variant lib-tq-ipc --workload small --runs 1 --iters 3 --warmup 0 --timeout 2 \
    --inject drop-send=1
show drop-send
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
mps=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x HALOPORT_REQUIRE_GPU)
for round in 1 2 3; do for b in haloport-base haloport; do
    step sweep-$b-$round 200 mpirun -np 2 "${mps[@]}" $bin/$b sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large \
        --runs 20 --out "$out/sweep-$b-$round"
    grep -E "ipc" "$out/sweep-$b-$round.txt"
    rm -rf "$out/sweep-$b-$round/cells"
done; done
for round in 1 2; do for b in haloport-base haloport; do
    name=stencil2-$b-$round
    step $name 100 mpirun -np 2 "${mps[@]}" $bin/$b stencil --backend cuda --transport ipc \
        --grid 1024x512x512 --procs 2x1x1 --periodic x --steps 20 --exchange-reps 20 \
        --json "$out/$name.json"
    grep -E "step median|compute alone|exposed|blocking|verified" "$out/$name.txt" | head -6
done; done
for mode in plain graph; do
    extra=(); [ $mode = graph ] && extra=(--graph)
    name=stencil-f64-$mode
    step $name 100 mpirun -np 1 "${mps[@]}" $bin/haloport stencil --backend cuda \
        --grid 512x512x512 --steps 20 --exchange-reps 20 "${extra[@]}" --json "$out/$name.json"
    grep -E "step median|compute alone|exposed|verified" "$out/$name.txt" | head -6
done
echo quit | nvidia-cuda-mps-control
step ncu-stencil 200 ncu --metrics gpu__time_duration.sum --kernel-name regex:hp_stencil \
    --launch-count 60 --csv $bin/haloport stencil --backend cuda --grid 512x512x512 --steps 4 \
    --exchange-reps 1 --no-verify
python3 - "$out/ncu-stencil.txt" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and r[0].isdigit()]
for r in rows:
    print(r[0], r[4], r[8], r[-2], r[-1])
PY
date -u
tar czf "$top/job.tgz" -C "$top" job && rm -rf "$out"
