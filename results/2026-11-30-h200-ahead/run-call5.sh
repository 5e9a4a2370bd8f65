#!/usr/bin/env bash
# Call 5: issue 23's figures on the commit's build (F, ci/build-gpu-carry.sh), on one H200: the
# two parts of ../2026-11-29-h200-issue23-final/run.sh, unchanged.
#   checks: CUDA conformance, the CLI's GPU tests, the HIP backend through the HIP-on-CUDA layer;
#           compute-sanitizer memcheck and racecheck of the stencil (2 ranks sharing the GPU over
#           ipc and 1 rank, f64 and f32, plain and --graph) and of lib-tq-ipc (small, thesis-9,
#           every element checked);
#   perf:   under MPS, the step at 512^3 in every layout, plain and --graph, beside the copy;
#           the issue's CuPy probes; the sweep of ipc-tq and lib-*-ipc, 2 ranks, two rounds;
#           the scaling report of 1, 2, 4 and 8 ranks sharing the GPU.
# usage, from the repository root: bash results/2026-11-30-h200-ahead/run-call5.sh with
#   carry/bins.tar.xz: haloport, cuda-conformance, gpu-cuda-cli, hip-nvidia-conformance,
#   libhaloport_hipnv.so. Output: $OUT/checks-log.txt, checks.tgz, perf-log.txt, perf.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PART=checks bash "$here/../2026-11-29-h200-issue23-final/run.sh" carry "$OUT"
PART=perf bash "$here/../2026-11-29-h200-issue23-final/run.sh" carry "$OUT"
