#!/usr/bin/env bash
# Balanced chunks (every chunk at most the largest block's share): both ipc variants on 2 x H200,
# back to back and with the thesis protocol, --ipc-chunks 4, 8, 16, 32.
set -uo pipefail
out=${1:?usage: call-d.sh OUT}; mkdir -p "$out/w"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
hp=carry/haloport
for ch in 4 8 16 32; do
    for pacing in no-barrier barrier; do
        extra=(); [ $pacing = no-barrier ] && extra=(--no-barrier)
        echo "=== chunks $ch, $pacing"
        mpirun -np 2 $hp sweep --backend cuda --variants ipc-base,ipc-tq "${extra[@]}" \
            --ipc-chunks $ch --workloads small,thesis-9,thesis-27,large --runs 10 --quiet \
            --out "$out/w/chunks-$ch-$pacing" 2>&1 | tail -1
        rm -rf "$out/w/chunks-$ch-$pacing/cells"
    done
done
tar czf "$out/chunks.tar.gz" -C "$out/w" .
