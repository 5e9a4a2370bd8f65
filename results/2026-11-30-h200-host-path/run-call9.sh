#!/usr/bin/env bash
# Call 9: two H200s, one rank a GPU: does a cooperative launch make the library's launch call as
# short as ipc-tq's? K is M (stage marks) plus coop.diff's switch: with HP_DIAG_COOP set, the one
# launch's kernels are launched cooperatively (cuLaunchCooperativeKernel), as ipc-tq's kernel is.
# Built for sm_90 alone. ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 3 rounds of plain
# and cooperative interleaved; then 200 measured iterations of each with stages.py.
# usage, from the repository root: bash results/2026-11-30-h200-host-path/run-call9.sh
#   carry/K.part.05, the end of haloport-K.xz; its start, K.part.00-04, was left in /tmp/keep by
#   the calls before. Output: $OUT/call9-log.txt, $OUT/call9.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin
cat /tmp/keep/K.part.0[0-4] carry/K.part.05 | xz -dc > $bin/haloport-K && chmod +x $bin/haloport-K || exit 1
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0,1
top=$OUT; out=/tmp/call9; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call9-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES -np 2)
sweep() { # NAME MODE ARGS...
    local name=$1 mode=$2; shift 2
    local extra=(); [ $mode = coop ] && extra=(-x HP_DIAG_COOP=1)
    echo "=== $name"
    timeout 120 "${mpi[@]}" "${extra[@]}" $bin/haloport-K sweep --backend cuda \
        --variants ipc-tq,lib-tq-ipc "$@" --out "$out/$name" > "$out/$name.txt" 2>&1
    echo "rc $?"; grep -E "lib-tq-ipc \||ipc-tq \|" "$out/$name.txt"
    rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
}
for round in 1 2 3; do
    for mode in plain coop; do
        sweep $mode-$round $mode --workloads small,thesis-9 --runs 20
    done
done
for mode in plain coop; do
    sweep long$mode-1 $mode --workloads small,thesis-9 --runs 2 --iters 203
    python3 "$here/../2026-11-29-h200-compact-launch/stages.py" "$out/long$mode-1"
done
python3 "$here/../2026-11-29-h200-small-floor/ratios.py" $out plain coop | tee "$top/call9-ratios.md"
date -u
tar czf "$top/call9.tgz" -C /tmp call9
