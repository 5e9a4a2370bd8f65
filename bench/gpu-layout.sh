#!/usr/bin/env bash
# Domain layouts on one GPU: the CUDA conformance suite (stencil shapes, epochs across 2^32),
# the GPU CLI tests, and, under MPS, the stencil's declarations (7-point, halo widths per side
# with a zero side, padding, an uneven decomposition) on 1 and 2 ranks, the 7-point exchange
# beside the 27-point one, a plan of a million ranks, and the library's device-direct variants
# against ipc-tq with BEFORE_BIN (another build of haloport) and with DIR's, interleaved.
# Every output goes into OUT/layout.tgz (one archive: easy to bring back from a GPU machine).
# usage: bench/gpu-layout.sh DIR OUT [BEFORE_BIN]
set -uo pipefail
dir=$(cd "${1:?usage: bench/gpu-layout.sh DIR OUT [BEFORE_BIN]}" && pwd)
out=${2:?OUT}
before=${3:-}
work=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export HALOPORT_BIN="$dir/haloport" LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
status=0
log() { local name=$1; shift; echo; echo "=== $* (> $name)"; "$@" > "$work/$name" 2>&1 || { echo "FAILED: $*"; status=1; }; grep -E "test result|verified|step median|messages per|^  6 faces|ipc-tq|lib-tq|median" "$work/$name" | head -n 8; }
hp="$dir/haloport"

nvidia-smi -L
log conformance.txt "$dir/cuda-conformance" --test-threads=1
log gpu-cli-tests.txt "$dir/gpu-cuda-cli" --test-threads=1

export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
mps="-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x LD_LIBRARY_PATH"

big="--grid 512x512x512 --type f64 --steps 20 --exchange-reps 20"
log stencil27-1rank.txt "$hp" stencil --backend cuda $big --json "$work/stencil27-1rank.json"
log stencil7-1rank.txt "$hp" stencil --backend cuda $big --stencil 7 --json "$work/stencil7-1rank.json"
[ -n "$before" ] && log stencil27-1rank-before.txt "$before" stencil --backend cuda $big
two="--grid 512x256x256 --procs 2x1x1 --type f64 --steps 20 --exchange-reps 20 --transport ipc --variant tq"
log stencil27-2ranks.txt mpirun -np 2 $mps "$hp" stencil --backend cuda $two --json "$work/stencil27-2ranks.json"
log stencil7-2ranks.txt mpirun -np 2 $mps "$hp" stencil --backend cuda $two --stencil 7 --json "$work/stencil7-2ranks.json"
log stencil-sides-pad-2ranks.txt mpirun -np 2 $mps "$hp" stencil --backend cuda $two \
    --halo-lo 1,0,2 --halo-hi 0,1,2 --pad 5,1,0 --json "$work/stencil-sides-pad-2ranks.json"
log stencil-sides-pad-1rank.txt "$hp" stencil --backend cuda --grid 256x128x128 --steps 10 \
    --halo-lo 1,0,2 --halo-hi 0,1,2 --pad 5,1,0 --stencil 7
printf 'x = [0, 100]\ny = [0]\nz = [0]\n' > "$work/uneven.toml"
log stencil-uneven-2ranks.txt mpirun -np 2 $mps "$hp" stencil --backend cuda --grid 256x128x128 \
    --steps 10 --decomposition "$work/uneven.toml" --transport ipc --type f32
log plan-1m.txt "$hp" plan --ranks 1000000 --rank 500501 --grid 10000x10000x10000

for round in 1 2; do
    for which in before after; do
        bin=$hp; [ "$which" = before ] && bin=$before
        [ -n "$bin" ] || continue
        log "sweep-$which-$round.txt" mpirun -np 2 $mps "$bin" sweep --backend cuda --quiet \
            --variants ipc-tq,lib-tq-ipc,lib-base-ipc --workloads small,thesis-9,thesis-27 --runs 5 \
            --out "$work/sweep-$which-$round"
    done
done
log app-2ranks-ipc.txt mpirun -np 2 $mps "$dir/app_kernel" --backend cuda --transport ipc --grid 256x128x128 --steps 20
echo quit | nvidia-cuda-mps-control
tar czf "$out/layout.tgz" -C "$work" .
echo
if [ $status -eq 0 ]; then echo "gpu-layout: all passed"; else echo "gpu-layout: FAILURES above"; fi
exit $status
