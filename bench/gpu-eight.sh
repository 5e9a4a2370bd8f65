#!/usr/bin/env bash
# The 3-D decomposition with real neighbours in all three dimensions, 8 ranks, one GPU
# each where the machine has 8 (fewer GPUs: the ranks share them under MPS, which checks
# correctness, not speed). Builds nothing: DIR holds haloport (ci/build-gpu-carry.sh, or its
# bins.tar.xz). Parts (all by default, or those named):
#   weak     haloport stencil --scaling weak, PART per rank (default 512^3 f64), on 1, 2, 4 and
#            8 ranks (process grids 1x1x1, 2x1x1, 2x2x1, 2x2x2), periodic in x, y and z, over
#            ipc (plain and --graph) and mpi, the 27-point stencil and the 7-point one (faces
#            only: 6 messages a rank), every rank count verified against one rank;
#   strong   --scaling strong of STRONG (default 1024^3 f64) over ipc, plain and --graph
#            (STRONG_MODES: those of "plain graph" to run);
#   setup    the exchange's set-up at 8 ranks (haloport stencil's set-up time) beside
#            haloport plan's compiled plan of the same rank;
#   faults   a dropped send (--inject drop-send=+x) and a stopped rank (SIGSTOP to one rank
#            mid-run) on 8 ranks: every other rank must end with a time-out naming the halo,
#            none may hang (each run has a limit).
# usage: bench/gpu-eight.sh DIR OUT [PART...]   (env: PART, STRONG, STEPS, RANKS; POINTS and RUNS
#   choose weak's stencils and runs, by default "27 7" and "ipc-plain ipc-graph mpi-plain")
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-eight.sh DIR OUT [PART...]}" && pwd)
out=${2:?usage: bench/gpu-eight.sh DIR OUT [PART...]}
shift 2
parts=${*:-weak strong setup faults}
part=${PART:-512x512x512}
strong=${STRONG:-1024x1024x1024}
steps=${STEPS:-20}
ranks=${RANKS:-8}
# The process grid of RANKS ranks for set-up and faults: 2x2x2, 2x2x1 or RANKSx1x1.
case $ranks in 8) procs=2x2x2 ;; 4) procs=2x2x1 ;; *) procs=${ranks}x1x1 ;; esac
IFS=x read -r gx gy gz <<< "$procs"
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -f "$dir/bins.tar.xz" ] && [ ! -x "$dir/haloport" ]; then
    tar xJf "$dir/bins.tar.xz" -C "$dir" || { echo "gpu-eight: cannot unpack $dir/bins.tar.xz"; exit 2; }
fi
hp=$dir/haloport
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$PATH:/usr/local/nvidia/bin"
mpi=(mpirun --bind-to none --oversubscribe -np "$ranks")
status=0
failed=()
# step NAME LIMIT_S COMMAND...: runs it with a time limit, output to OUT/NAME.log, tail shown.
step() {
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    echo; echo "=== $name: $*"
    timeout "$limit" "$@" > "$out/$name.log" 2>&1
    rc=$?
    tail -n "${TAIL:-12}" "$out/$name.log"
    echo "--- $name: exit $rc, $((SECONDS - t0)) s"
    if [ $rc -ne 0 ]; then status=1; failed+=("$name (exit $rc)"); fi
}
wants() { [[ " $parts " == *" $1 "* ]]; }

{ nvidia-smi -L; nvidia-smi topo -m; } 2>&1 | tee "$out/gpus.txt"
gpus=$(nvidia-smi -L | grep -c '^GPU')
if [ "$gpus" -lt "$ranks" ]; then
    echo "gpu-eight: $ranks ranks on $gpus GPU(s): ranks share GPUs under MPS (correctness, not speed)"
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe-eight CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log-eight
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && echo "MPS started"
    trap 'echo quit | nvidia-cuda-mps-control 2>/dev/null' EXIT
    mpi+=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
fi
common=(--backend cuda --periodic xyz --steps "$steps" --exchange-reps 20)

if wants weak; then
    for points in ${POINTS:-27 7}; do
        for run in ${RUNS:-ipc-plain ipc-graph mpi-plain}; do
            transport=${run%-*}
            extra=(); [ "${run#*-}" = graph ] && extra=(--graph)
            name=weak-$points-$run
            step "$name" 480 "${mpi[@]}" "$hp" stencil "${common[@]}" --scaling weak --grid "$part" \
                --stencil $points --transport "$transport" "${extra[@]}" \
                --json "$out/$name.json" --plot "$out/$name.svg"
        done
    done
fi

if wants strong; then
    for mode in ${STRONG_MODES:-plain graph}; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        step "strong-$mode" 480 "${mpi[@]}" "$hp" stencil "${common[@]}" --scaling strong \
            --grid "$strong" --transport ipc "${extra[@]}" --json "$out/strong-$mode.json" \
            --plot "$out/strong-$mode.svg"
    done
fi

if wants setup; then
    # The whole grid of RANKS parts of PART, and the plan of its rank 0 compiled without MPI or
    # GPU.
    IFS=x read -r px py pz <<< "$part"
    grid=$((gx * px))x$((gy * py))x$((gz * pz))
    step setup-stencil 300 "${mpi[@]}" "$hp" stencil --backend cuda --periodic xyz --steps 2 \
        --exchange-reps 2 --grid "$grid" --procs "$procs" --transport ipc \
        --json "$out/setup-stencil.json"
    step setup-plan 60 "$hp" plan --ranks "$ranks" --rank 0 --grid "$grid" --periodic xyz
fi

if wants faults; then
    IFS=x read -r px py pz <<< "$part"
    small=$((px / 4))x$((py / 4))x$((pz / 4))
    # A lost message: every rank must end with a time-out naming the halo, and a non-zero exit.
    timeout 120 "${mpi[@]}" "$hp" stencil --backend cuda --periodic xyz --grid "$small" \
        --procs "$procs" --transport ipc --steps 4 --timeout 5 --inject drop-send=+x \
        > "$out/fault-drop-send.log" 2>&1
    rc=$?
    echo "=== drop-send=+x: exit $rc (want non-zero, not 124)"
    grep -ciE "timed out|time-out" "$out/fault-drop-send.log" | sed 's/^/lines naming a time-out: /'
    grep -iE "timed out|time-out" "$out/fault-drop-send.log" | head -n 3
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then status=1; failed+=("fault-drop-send (exit $rc)"); fi
    # A stopped rank: the fourth rank process (the last, with fewer ranks) receives SIGSTOP
    # once the job runs (enough steps that it is still stepping 15 s in); the others must time
    # out.
    timeout 180 "${mpi[@]}" "$hp" stencil --backend cuda --periodic xyz --grid "$small" \
        --procs "$procs" --transport ipc --steps 2000000 --timeout 5 \
        > "$out/fault-stopped-rank.log" 2>&1 &
    job=$!
    sleep 15
    # The rank processes' command lines start with the binary (mpirun's and timeout's do not).
    victim=$(pgrep -f "^$hp stencil" | sort -n | sed -n "$((ranks < 4 ? ranks : 4))p")
    if [ -n "$victim" ]; then kill -STOP "$victim"; echo "stopped pid $victim"; fi
    wait $job
    rc=$?
    [ -n "$victim" ] && kill -KILL "$victim" 2> /dev/null
    echo "=== stopped rank: exit $rc (want non-zero, not 124)"
    grep -iE "timed out|time-out" "$out/fault-stopped-rank.log" | head -n 3
    if [ -z "$victim" ] || [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
        status=1; failed+=("fault-stopped-rank (exit $rc)")
    fi
fi

echo; echo "=== summary"
grep -hE "verified|MISMATCH" "$out"/{weak,strong,setup}-*.log 2>/dev/null | sort | uniq -c | head -20
if [ $status -eq 0 ]; then echo "gpu-eight: all passed"; else echo "gpu-eight: FAILED: ${failed[*]}"; fi
exit $status
