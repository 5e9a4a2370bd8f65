#!/usr/bin/env bash
# v4 (a fused march tile's thread tests its cells against the quiet cells once a tile, so only
# cells a neighbour may need test the tile's messages) beside v2 (HEAD): checks of v4
# (gpu-fused.sh checks: verification, examples, sanitizers), v2 and v4 interleaved (2 ranks,
# plain and --graph, with the ordinary step of v4), and CUPTI traces of 1 rank with no
# neighbour (--periodic none: every tile quiet) and with itself as neighbour in x, y and z.
set -uo pipefail
t0=$SECONDS
c=/tmp/c; mkdir -p $c && tar xJf carry/fz/pack.tar.xz -C $c || exit 3
cp $c/haloport-v4 $c/haloport
o=$OUT/v4; mkdir -p $o
timeout 230 bash bench/gpu-fused.sh $c $o/checks checks > $o/checks.txt 2>&1
echo "checks exit $? after $((SECONDS-t0)) s"
grep -E '^--- ' $o/checks.txt; sed -n '/=== summary/,$p' $o/checks.txt | grep -E "ERROR|verified|passed|FAILED"
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
  for run in v4-ordinary v2-fused v4-fused v2-fused-graph v4-fused-graph; do
    f=(); case $run in *fused*) f+=(--fused);; esac; case $run in *graph) f+=(--graph);; esac
    timeout 100 "${mpi[@]}" -np 2 $c/haloport-${run%%-*} stencil "${big[@]}" "${f[@]}" --json $o/$run-$round.json > $o/$run-$round.log 2>&1
    echo "$run-$round exit $? at $((SECONDS-t0)) s"
  done
done
for b in v2 v4; do
  for p in none xyz; do
    mkdir -p $o/trace-one-$p-$b
    timeout 100 "${mpi[@]}" -np 1 -x CUDA_INJECTION64_PATH=$c/libtrace.so -x KERNEL_TRACE_DIR=$o/trace-one-$p-$b $c/haloport-$b stencil --backend cuda --type f64 --grid 512x256x256 --periodic $p --steps 20 --exchange-reps 0 --fused --json $o/trace-one-$p-$b.json > $o/trace-one-$p-$b.log 2>&1
    echo "trace one $p $b exit $?"
  done
done
mkdir -p $o/trace-one-xyz-ordinary
timeout 100 "${mpi[@]}" -np 1 -x CUDA_INJECTION64_PATH=$c/libtrace.so -x KERNEL_TRACE_DIR=$o/trace-one-xyz-ordinary $c/haloport-v4 stencil --backend cuda --type f64 --grid 512x256x256 --steps 20 --exchange-reps 0 --json $o/trace-one-xyz-ordinary.json > $o/trace-one-xyz-ordinary.log 2>&1
echo "trace one ordinary exit $?"
echo quit | nvidia-cuda-mps-control
python3 - $o <<'PY'
import glob, json, os, statistics, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(f))
    print(f"{os.path.basename(f)[:-5]:22} {r['verified']!s:>5} {r.get('fused_update', '-'):>9} {r['step_median_us']:8.1f} {r['compute_median_us']:8.1f} {r['exposed_exchange_us']:8.1f}")
for d0 in sorted(glob.glob(os.path.join(sys.argv[1], "trace-one-*"))):
    if not os.path.isdir(d0): continue
    for f in glob.glob(os.path.join(d0, "trace.*")):
        d = {}
        for line in open(f):
            s, e, st, g, name = line.split()[:5]
            if int(g) >= 4096:
                d.setdefault((name, g), []).append((int(e) - int(s)) / 1e3)
        print(os.path.basename(d0), "  ".join(f"{n}[{g}] n={len(v)} median {statistics.median(v):.1f} us" for (n, g), v in sorted(d.items())))
PY
echo "done after $((SECONDS-t0)) s"
tar czf $OUT/v4.tar.gz -C $OUT v4 && rm -rf $o
