#!/usr/bin/env bash
# Issues 23 and 26 on a machine of two H200s, one rank a GPU, and the default field placement
# (--placement auto) on one of them. Parts:
#   PART=two     the sweep of ipc-tq and lib-*-ipc (SWEEP_ROUNDS rounds, 2 by default, 20 runs
#                each); ci/gpu-eight.sh
#                with RANKS=2: weak scaling of 512^3 f64 a GPU on 1 and 2 GPUs (2x1x1,
#                periodic in x, y and z), 27- and 7-point, ipc plain and --graph, mpi plain;
#                the exchange's set-up at 2 ranks beside haloport plan; a dropped send and a
#                stopped rank;
#   PART=strong  ci/gpu-eight.sh with RANKS=2: the dropped send and stopped rank again; on GPU
#                0 alone: the CLI's GPU tests, compute-sanitizer memcheck and racecheck on one
#                rank whose f32 fields auto places for the interior, and the step at 512^3 (one
#                rank) with the default placement beside --placement tiles and interior (two
#                rounds; f32 rows of 514 and f64 rows of 516 one); then ci/gpu-eight.sh's strong
#                scaling of 1024^3 f64 on 1 and 2 GPUs, plain and --graph.
# usage, from the repository root: PART=two|strong bash results/2026-11-29-h200x2-two-gpus/run.sh BINDIR OUT
#   BINDIR holds bins.tar.xz: haloport and gpu-cuda-cli. Output in OUT/PART.tgz, OUT/PART-log.txt.
set -uo pipefail
part=${PART:?PART=two or PART=strong}
dir=$(cd "$1" && pwd); top=$2; out=$top/$part; mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=/tmp/job-bins; rm -rf $bin; mkdir -p $bin && tar xJf "$dir/bins.tar.xz" -C $bin
export PATH="/usr/local/cuda/bin:$PATH:/usr/local/nvidia/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
exec > >(tee "$top/$part-log.txt") 2>&1
date -u; nvidia-smi -L; nvidia-smi topo -m
step() { # NAME LIMIT COMMAND...
    local name=$1 limit=$2 t0=$SECONDS; shift 2
    echo "=== $name"
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1; echo "rc $? ($((SECONDS - t0)) s)"
}
show() {
    grep -E "step median|compute alone|verified|placement|test result|FAILED|panicked|ERROR SUMMARY|RACECHECK SUMMARY" \
        "$out/$1.txt" | head -12
}
if [ "$part" = two ]; then
    for round in $(seq 1 "${SWEEP_ROUNDS:-2}"); do
        step sweep-$round 200 mpirun --bind-to none -x PATH -x HALOPORT_REQUIRE_GPU -np 2 \
            $bin/haloport sweep --backend cuda --variants ipc-tq,lib-base-ipc,lib-tq-ipc \
            --workloads small,thesis-9,thesis-27,large --runs 20 --out "$out/sweep-$round"
        grep -E "ipc" "$out/sweep-$round.txt"
        rm -rf "$out/sweep-$round/cells"; gzip -f "$out/sweep-$round/sweep.json"
    done
    # PART also names gpu-eight.sh's part a rank: give it.
    PART=512x512x512 RANKS=2 STEPS=20 TAIL=8 bash ci/gpu-eight.sh $bin "$out/eight" weak setup faults
fi
if [ "$part" = strong ]; then
    # Call 2's stopped-rank run picked no rank with 2 (the fourth); gpu-eight.sh now picks the
    # last where there are fewer than 4.
    PART=512x512x512 RANKS=2 TAIL=8 bash ci/gpu-eight.sh $bin "$out/faults" faults
    (
    export CUDA_VISIBLE_DEVICES=0
    HALOPORT_BIN=$bin/haloport step gpu-cli 300 $bin/gpu-cuda-cli --test-threads=1; show gpu-cli
    for tool in memcheck racecheck; do for mode in plain graph; do
        extra=(); [ $mode = graph ] && extra=(--graph)
        name=sanitize-1rank-f32-auto-$mode-$tool
        step $name 200 compute-sanitizer --tool $tool --error-exitcode 9 $bin/haloport stencil \
            --backend cuda --grid 128x64x64 --type f32 --pad 6,0,0 --fields 2 --steps 6 \
            --exchange-reps 2 "${extra[@]}" --json "$out/$name.json"
        show $name
    done; done
    for round in 1 2; do
        layouts="f32-rows520 f32-rows520-tiles f32-rows520-interior"
        [ $round = 1 ] && layouts+=" f32-rows514 f64-rows516"
        for layout in $layouts; do
            case $layout in
                f32-rows520) args=(--type f32 --pad 6,0,0) ;;
                f32-rows520-tiles) args=(--type f32 --pad 6,0,0 --placement tiles) ;;
                f32-rows520-interior) args=(--type f32 --pad 6,0,0 --placement interior) ;;
                f32-rows514) args=(--type f32) ;;
                f64-rows516) args=(--type f64 --pad 2,0,0) ;;
            esac
            for mode in plain graph; do
                extra=(); [ $mode = graph ] && extra=(--graph)
                name=stencil-$layout-$mode-$round
                step $name 100 $bin/haloport stencil --backend cuda --grid 512x512x512 \
                    "${args[@]}" "${extra[@]}" --steps 20 --exchange-reps 20 \
                    --json "$out/$name.json"
                show $name
            done
        done
    done
    )
    PART=512x512x512 RANKS=2 STEPS=20 TAIL=8 bash ci/gpu-eight.sh $bin "$out/eight" strong
fi
date -u
tar czf "$top/$part.tgz" -C "$top" "$part" && rm -rf "$out"
