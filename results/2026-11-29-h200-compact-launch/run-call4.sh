#!/usr/bin/env bash
# Call 4: the build of this directory's changes (uniform blocks, the event asked after 100 us,
# the table sets scanned, with exp.diff's stage marks and switches) against the build before
# (93d6046 with stages.diff), checked and measured on one H200 under MPS:
#   checks: CUDA conformance, the CLI's GPU tests, compute-sanitizer memcheck of lib-tq-ipc
#           (small, thesis-9, full verification, 2 ranks sharing the GPU), of the new build;
#   sweeps: ipc-tq and lib-tq-ipc (small, thesis-9, thesis-27, large; 20 runs), 3 rounds of 3
#           configurations interleaved: base (the build before), new, and new-searched (the new
#           build with HALOPORT_EXP_NO_UNIFORM=1: its blocks search the table as before).
# usage, from the repository root: bash results/2026-11-29-h200-compact-launch/run-call4.sh
#   carry/bins.tar.xz: haloport-base, haloport-new, cuda-conformance, gpu-cuda-cli.
#   Output: $OUT/call4-log.txt, $OUT/call4.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call4; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call4-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "test result|FAILED|panicked|ERROR SUMMARY|verified" "$out/$1.txt" | head -10
}
step conformance 60 $bin/cuda-conformance --test-threads=1; show conformance
HALOPORT_BIN=$bin/haloport-new step gpu-cli 90 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
step memcheck 90 "${mpi[@]}" compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/haloport-new sweep --backend cuda --variants lib-tq-ipc --workloads small,thesis-9 \
    --runs 1 --verify full --out "$out/memcheck"
show memcheck; grep -E "lib-tq-ipc" "$out/memcheck.txt" | grep "|"; rm -rf "$out/memcheck/cells"
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
for round in 1 2 3; do
    for config in base new new-searched; do
        env=(); b=haloport-new
        case $config in
            base) b=haloport-base ;;
            new-searched) env=(-x HALOPORT_EXP_NO_UNIFORM=1) ;;
        esac
        name=$config-$round
        step $name 100 "${mpi[@]}" "${env[@]}" $bin/$b sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9,thesis-27,large --runs 20 \
            --out "$out/$name"
        grep -oE "uniform_blocks [0-9]+" "$out/$name.txt" | sort | uniq -c
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -8
        python3 "$here/stages.py" "$out/$name" > "$out/$name-stages.md"
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        grep -v WARN "$out/$name.txt" > "$out/$name.tmp"; mv "$out/$name.tmp" "$out/$name.txt"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
date -u
tar czf "$top/call4.tgz" -C /tmp call4
