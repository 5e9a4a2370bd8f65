#!/usr/bin/env bash
# Where the fused interior launch loses time in the run: CUPTI traces of the fused step with
# 2 ranks (non-periodic: one boundary face each; periodic in x: two), 1 rank periodic in x
# (its own neighbour) and 1 rank with no neighbour (every tile quiet), all under MPS; the
# median duration of each rank's fused launch and of its plain inner box (compute alone).
set -uo pipefail
c=/tmp/c; mkdir -p $c && tar xJf carry/fx/pack.tar.xz -C $c || exit 3
nvidia-smi -L
inc=$(dirname "$(find /usr/local/cuda/ -name cupti.h | head -1)")
lib=$(dirname "$(find /usr/local/cuda/ -name 'libcupti.so*' | head -1)")
gcc -shared -fPIC -O2 -DKERNEL_T=CUpti_ActivityKernel10 -I"$inc" -I/usr/local/cuda/include bench/kernel-trace.c -L"$lib" -lcupti -Wl,-rpath,"$lib" -o $c/libtrace.so || exit 4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
o=$OUT/where; mkdir -p $o
run() {
  local name=$1 np=$2; shift 2
  mkdir -p $o/$name
  timeout 100 mpirun --allow-run-as-root -x HALOPORT_REQUIRE_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_INJECTION64_PATH=$c/libtrace.so -x KERNEL_TRACE_DIR=$o/$name -np $np $c/haloport stencil --backend cuda --transport ipc --type f64 --steps 20 --exchange-reps 0 --fused "$@" > $o/$name.log 2>&1
  echo "$name exit $?"; grep -E 'step median|compute alone|verified' $o/$name.log | sed 's/^/   /'
}
run two 2 --grid 1024x256x256 --procs 2x1x1
run two-periodic 2 --grid 1024x256x256 --procs 2x1x1 --periodic x
run one-periodic 1 --grid 512x256x256 --periodic x
run one 1 --grid 512x256x256
echo quit | nvidia-cuda-mps-control
python3 - $o <<'PY'
import glob, os, statistics, sys
for case in ["two", "two-periodic", "one-periodic", "one"]:
    for f in sorted(glob.glob(os.path.join(sys.argv[1], case, "trace.*"))):
        d = {}
        for line in open(f):
            s, e, st, g, name = line.split()[:5]
            if int(g) >= 4096:
                d.setdefault((name, g), []).append((int(e) - int(s)) / 1e3)
        print(case, os.path.basename(f), "  ".join(f"{n}[{g}] n={len(v)} median {statistics.median(v):.1f} us" for (n, g), v in sorted(d.items())))
PY
tar czf $OUT/where.tar.gz -C $OUT where && rm -rf $o
