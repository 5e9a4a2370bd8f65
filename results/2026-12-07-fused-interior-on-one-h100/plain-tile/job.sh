#!/usr/bin/env bash
# v3 (a fused march tile no neighbour needs runs the plain tile code) beside v2: checks of v3
# (gpu-fused.sh checks: verification, sanitizers), v2 and v3 interleaved (2 ranks, plain and
# --graph, with the ordinary step of v3), and the median kernel times of 1 rank with no
# neighbour (every tile quiet) under a CUPTI trace.
set -uo pipefail
t0=$SECONDS
c=/tmp/c; mkdir -p $c && tar xJf carry/fy/pack.tar.xz -C $c || exit 3
cp $c/haloport-v3 $c/haloport
o=$OUT/v3; mkdir -p $o
timeout 200 bash bench/gpu-fused.sh $c $o/checks checks > $o/checks.txt 2>&1
echo "checks exit $? after $((SECONDS-t0)) s"
grep -E '^--- ' $o/checks.txt; sed -n '/=== summary/,$p' $o/checks.txt | grep -E "ERROR|verified|passed|FAILED"
rm -f $o/checks.tar.gz
inc=$(dirname "$(find /usr/local/cuda/ -name cupti.h | head -1)")
lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
gcc -shared -fPIC -O2 -DKERNEL_T=CUpti_ActivityKernel10 -I"$inc" -I/usr/local/cuda/include bench/kernel-trace.c -L"$lib" -lcupti -Wl,-rpath,"$lib" -o $c/libtrace.so || echo "no tracer"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
mpi=(mpirun --allow-run-as-root -x HALOPORT_REQUIRE_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
big=(--backend cuda --transport ipc --grid 1024x256x256 --procs 2x1x1 --type f64 --steps 60 --exchange-reps 20)
for round in 1 2; do
  for run in v3-ordinary v2-fused v3-fused v2-fused-graph v3-fused-graph; do
    f=(); case $run in *fused*) f+=(--fused);; esac; case $run in *graph) f+=(--graph);; esac
    timeout 100 "${mpi[@]}" -np 2 $c/haloport-${run%%-*} stencil "${big[@]}" "${f[@]}" --json $o/$run-$round.json > $o/$run-$round.log 2>&1
    echo "$run-$round exit $?"
  done
done
for b in v2 v3; do
  mkdir -p $o/trace-one-$b
  timeout 100 "${mpi[@]}" -np 1 -x CUDA_INJECTION64_PATH=$c/libtrace.so -x KERNEL_TRACE_DIR=$o/trace-one-$b $c/haloport-$b stencil --backend cuda --type f64 --grid 512x256x256 --steps 20 --exchange-reps 0 --fused > $o/trace-one-$b.log 2>&1
  echo "trace one $b exit $?"
done
echo quit | nvidia-cuda-mps-control
python3 - $o <<'PY'
import glob, json, os, statistics, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    print(f"{os.path.basename(f)[:-5]:20} {r['verified']!s:>5} {r.get('fused_update', '-'):>9} {r['step_median_us']:8.1f} {r['compute_median_us']:8.1f} {r['exposed_exchange_us']:8.1f}")
for b in ["v2", "v3"]:
    for f in glob.glob(os.path.join(sys.argv[1], f"trace-one-{b}", "trace.*")):
        d = {}
        for line in open(f):
            s, e, st, g, name = line.split()[:5]
            if int(g) >= 4096:
                d.setdefault((name, g), []).append((int(e) - int(s)) / 1e3)
        print(b, "  ".join(f"{n}[{g}] n={len(v)} median {statistics.median(v):.1f} us" for (n, g), v in sorted(d.items())))
PY
echo "done after $((SECONDS-t0)) s"
tar czf $OUT/v3.tar.gz -C $OUT v3 && rm -rf $o
