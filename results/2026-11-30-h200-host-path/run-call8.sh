#!/usr/bin/env bash
# Call 8: two H200s, one rank a GPU: where thesis-9's launch goes late. M is the final build with
# the stage marks of stages3.diff (a CPU event of kind "send", its block the stage, at each step
# of the library's blocking exchange and around ipc-tq's launch). ipc-tq and lib-tq-ipc, small and
# thesis-9, 200 measured iterations, 2 rounds; stages.py and timelines.py of each.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call8.sh
#   carry/M.part.03, the end of haloport-M.xz; its start, M.part.00-02, was left in /tmp/keep by the
#   calls before (the whole was over the device tool's limit beside the tree). Output:
#   $OUT/call8-log.txt, $OUT/call8.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
cat /tmp/keep/M.part.00 /tmp/keep/M.part.01 /tmp/keep/M.part.02 carry/M.part.03 | xz -dc > $bin/haloport-M && chmod +x $bin/haloport-M || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1
top=$OUT; out=/tmp/call8; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call8-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES -np 2)
for round in 1 2; do
    name=M-$round
    echo "=== $name"
    timeout 120 "${mpi[@]}" $bin/haloport-M sweep --backend cuda --variants ipc-tq,lib-tq-ipc \
        --workloads small,thesis-9 --runs 2 --iters 203 --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "rc $?"; grep -E "lib-tq-ipc \||ipc-tq \|" "$out/$name.txt"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    python3 "$here/../2026-11-29-h200-compact-launch/stages.py" "$out/$name"
    python3 "$here/timelines.py" "$out/$name/sweep.json.gz" small thesis-9
done
date -u
tar czf "$top/call8.tgz" -C /tmp call8
