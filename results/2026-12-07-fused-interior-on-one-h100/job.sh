#!/usr/bin/env bash
# One device call: fused mode's step as one launch over the interior, its quiet tiles skipping
# the box form (v2), beside the same launch without that skip (v1). gpu-fused.sh with v2
# (checks, speed against the ordinary step, HIP-on-CUDA beside CUDA, sanitizers); v1 and v2
# interleaved, plain and --graph; a CUPTI kernel trace of each (and of the ordinary step);
# Nsight Compute's time of the fused launch and of the plain inner box on one rank.
set -uo pipefail
t0=$SECONDS
c=/tmp/c; mkdir -p $c && tar xJf carry/fq/pack.tar.xz -C $c || exit 3
cp $c/haloport-v2 $c/haloport
o=$OUT/run; mkdir -p $o
echo "unpacked in $((SECONDS-t0)) s"
ROUNDS=2 timeout 300 bash bench/gpu-fused.sh $c $o/fused all > $o/fused.txt 2>&1
echo "gpu-fused exit $? after $((SECONDS-t0)) s"
grep -E '^--- ' $o/fused.txt
sed -n '/=== summary/,$p' $o/fused.txt
rm -f $o/fused.tar.gz
inc=$(dirname "$(find /usr/local/cuda/ -name cupti.h | head -1)")
lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
gcc -shared -fPIC -O2 -DKERNEL_T=CUpti_ActivityKernel10 -I"$inc" -I/usr/local/cuda/include bench/kernel-trace.c -L"$lib" -lcupti -Wl,-rpath,"$lib" -o $c/libtrace.so || echo "tracer not built"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
mpi=(mpirun --allow-run-as-root -x HALOPORT_REQUIRE_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 2)
big=(--backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64)
ab=$o/ab; mkdir -p $ab
for round in 1 2; do
  for run in v1-fused v2-fused v1-fused-graph v2-fused-graph; do
    g=(); case $run in *graph) g+=(--graph);; esac
    timeout 100 "${mpi[@]}" $c/haloport-${run%%-*} stencil "${big[@]}" --fused "${g[@]}" --steps 60 --exchange-reps 20 --json $ab/$run-$round.json > $ab/$run-$round.log 2>&1
    echo "$run-$round exit $?"
  done
done
for run in v2-ordinary v1-fused v2-fused; do
  f=(); case $run in *fused) f+=(--fused);; esac
  mkdir -p $ab/trace-$run
  timeout 100 "${mpi[@]}" -x CUDA_INJECTION64_PATH=$c/libtrace.so -x KERNEL_TRACE_DIR=$ab/trace-$run $c/haloport-${run%%-*} stencil "${big[@]}" "${f[@]}" --steps 12 --exchange-reps 0 > $ab/trace-$run.log 2>&1
  echo "trace $run exit $?"
done
echo quit | nvidia-cuda-mps-control; sleep 2
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
python3 bench/kernel-timeline.py $ab/trace-v2-fused hp_stencil_fused 6 | head -30
for b in v1 v2; do
  timeout 100 mpirun --allow-run-as-root -np 1 ncu -k regex:'hp_stencil_fused|hp_stencil27_march64' --metrics gpu__time_duration.sum --launch-skip 2 --launch-count 6 $c/haloport-$b stencil --backend cuda --grid 512x256x256 --periodic x --type f64 --steps 6 --exchange-reps 2 --fused > $ab/ncu-$b.log 2>&1
  echo "ncu $b exit $?"
  awk '/^  hp_/ {k = $1} /gpu__time/ {print k, $NF, $(NF-1)}' $ab/ncu-$b.log
done
python3 - $ab <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    print(f"{os.path.basename(f)[:-5]:24} {r['verified']!s:>5} {r.get('fused_update', '-'):>9} {r['step_median_us']:8.1f} {r['compute_median_us']:8.1f} {r['exposed_exchange_us']:8.1f}")
PY
echo "done after $((SECONDS-t0)) s"
tar czf $OUT/run.tar.gz -C $OUT run && rm -rf $o
