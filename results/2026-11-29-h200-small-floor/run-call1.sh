#!/usr/bin/env bash
# Call 1: what is left of small's gap when pieces of the library's path are taken away
# (diagnostic switches of diag.diff, one binary): the one launch's kernel for 8-byte words only
# (w8) or synthetic regions only (synth), no event recorded after the launch (noevent), no
# status words read before and after (lean), and all of synth, noevent and lean (all), against
# the unchanged path (base). ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks sharing
# one H200 under MPS, 3 rounds of the 6 configurations interleaved.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call1.sh
#   carry/bins.tar.xz: haloport-diag. Output: $OUT/call1-log.txt, $OUT/call1.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call1; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call1-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
lscpu | grep -E "Model name|^CPU\(s\)"
mpi=(mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -x CUDA_VISIBLE_DEVICES
    -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
configs="base w8 synth noevent lean all"
for round in 1 2 3; do
    for config in $configs; do
        env=()
        case $config in
            w8) env=(-x HP_DIAG_FEW=hp_diag_few_w8) ;;
            synth) env=(-x HP_DIAG_FEW=hp_diag_few_synth) ;;
            noevent) env=(-x HP_DIAG_NOEVENT=1) ;;
            lean) env=(-x HP_DIAG_LEAN=1) ;;
            all) env=(-x HP_DIAG_FEW=hp_diag_few_synth -x HP_DIAG_NOEVENT=1 -x HP_DIAG_LEAN=1) ;;
        esac
        name=$config-$round t0=$SECONDS
        echo "=== $name"
        timeout 100 "${mpi[@]}" "${env[@]}" $bin/haloport-diag sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 \
            --out "$out/$name" > "$out/$name.txt" 2>&1
        echo "rc $? ($((SECONDS - t0)) s)"
        grep -E "DIAG" "$out/$name.txt" | sort | uniq -c
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out $configs | tee "$top/call1-ratios.md"
date -u
tar czf "$top/call1.tgz" -C /tmp call1
