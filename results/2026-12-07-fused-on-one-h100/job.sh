#!/usr/bin/env bash
# Fused mode on one GPU, 2 ranks under MPS: ordinary and fused steps timed, fused verified (graph, f32, 7-point halo 2), then memcheck and racecheck of the fused stencil. Logs to $OUT/log.txt, result files to $OUT/results.jsonl.
d=$(cd "$(dirname "$0")" && pwd); L=$OUT/log.txt; J=$OUT/results.jsonl; t=/tmp/q; mkdir -p $t
export LD_LIBRARY_PATH="$d:$d/capi/lib" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mpsd CUDA_MPS_LOG_DIRECTORY=/tmp/mpsl; mkdir -p /tmp/mpsd /tmp/mpsl
nvidia-smi -L >> $L; nvidia-cuda-mps-control -d && echo "MPS started" >> $L
m=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
s() { local n=$1 lim=$2; shift 2; echo "=== $n: $*" >> $L; timeout $lim "$@" >> $L 2>&1; echo "--- $n: exit $?" >> $L
      [ -f $t/$n.json ] && { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); r['run']=sys.argv[2]; print(json.dumps(r))" $t/$n.json $n >> $J; }; }
big=(--backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64 --steps 60 --exchange-reps 20)
for mode in ordinary fused; do for g in plain graph; do
  f=(); [ $mode = fused ] && f+=(--fused); [ $g = graph ] && f+=(--graph)
  s speed-$mode-$g 40 "${m[@]}" -np 2 $d/haloport stencil "${big[@]}" "${f[@]}" --json $t/speed-$mode-$g.json
done; done
s verify-graph 30 "${m[@]}" -np 2 $d/haloport stencil --backend cuda --fused --graph --transport ipc --grid 192x96x80 --steps 10 --json $t/verify-graph.json
s verify-f32 30 "${m[@]}" -np 2 $d/haloport stencil --backend cuda --fused --transport ipc --grid 192x96x80 --type f32 --fields 2 --steps 10 --json $t/verify-f32.json
s verify-7pt-halo2 30 "${m[@]}" -np 2 $d/haloport stencil --backend cuda --fused --transport ipc --grid 96x64x48 --stencil 7 --halo 2 --periodic xyz --steps 10 --json $t/verify-7pt-halo2.json
HALOPORT_IPC_RANKS_PER_NODE=2 s verify-two-pretend-nodes 30 "${m[@]}" -x HALOPORT_IPC_RANKS_PER_NODE -np 4 $d/haloport stencil --backend cuda --fused --transport auto --grid 256x64x64 --procs 4x1x1 --steps 10 --json $t/verify-two-pretend-nodes.json
echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
m=(mpirun --allow-run-as-root -x LD_LIBRARY_PATH)
small=(--backend cuda --fused --transport ipc --grid 48x40x32 --steps 4 --exchange-reps 2)
s memcheck-stencil 40 "${m[@]}" -np 2 compute-sanitizer --error-exitcode 9 --tool memcheck $d/haloport stencil "${small[@]}"
s racecheck-stencil 60 "${m[@]}" -np 2 compute-sanitizer --error-exitcode 9 --tool racecheck $d/haloport stencil "${small[@]}"
echo done >> $L
