#!/usr/bin/env bash
# Call 4: what is left of small's gap after call 3, on its build with one diagnostic switch
# (diag3.diff: HP_DIAG_COOP launches the one launch cooperatively, as ipc-tq is launched), and
# with the ranks bound to cores (mpirun --bind-to core) or not (--bind-to none, as every sweep
# here so far). ipc-tq and lib-tq-ipc, small and thesis-9, 20 runs, 2 ranks sharing one H200
# under MPS, 4 rounds of the 4 configurations interleaved.
# usage, from the repository root: bash results/2026-11-29-h200-small-floor/run-call4.sh
#   carry/bins.tar.xz: haloport-diag. Output: $OUT/call4-log.txt, $OUT/call4.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf carry/bins.tar.xz -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
top=$OUT; out=/tmp/call4; rm -rf $out; mkdir -p $out
exec > >(tee "$top/call4-log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS on GPU 0"
configs="none bind coop bindcoop"
for round in 1 2 3 4; do
    for config in $configs; do
        bind=none env=()
        case $config in
            bind) bind=core ;;
            coop) env=(-x HP_DIAG_COOP=1) ;;
            bindcoop) bind=core env=(-x HP_DIAG_COOP=1) ;;
        esac
        name=$config-$round t0=$SECONDS
        echo "=== $name"
        timeout 100 mpirun --bind-to $bind --report-bindings -x PATH -x HALOPORT_REQUIRE_GPU \
            -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2 \
            "${env[@]}" $bin/haloport-diag sweep --backend cuda \
            --variants ipc-tq,lib-tq-ipc --workloads small,thesis-9 --runs 20 \
            --out "$out/$name" > "$out/$name.txt" 2>&1
        echo "rc $? ($((SECONDS - t0)) s)"
        grep -E "bound|binding" "$out/$name.txt" | head -2
        grep -E "ipc" "$out/$name.txt" | grep "|" | head -4
        python3 "$here/../2026-11-26-lib-timelines/timelines.py" "$out/$name" > "$out/$name-timelines.md"
        rm -rf "$out/$name/cells"; gzip -f "$out/$name/sweep.json"
    done
done
echo quit | nvidia-cuda-mps-control
python3 "$here/ratios.py" $out $configs | tee "$top/call4-ratios.md"
date -u
tar czf "$top/call4.tgz" -C /tmp call4
