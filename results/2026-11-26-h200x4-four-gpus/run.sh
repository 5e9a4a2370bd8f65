#!/usr/bin/env bash
# Issue 26's 4-GPU part on a machine of 4 x NVIDIA H200 (NV18 between every pair), one rank a
# GPU, with ci/gpu-eight.sh (RANKS=4: process grids 1x1x1, 2x1x1, 2x2x1) of build d49ba9d, in
# the order the device budget allowed: weak scaling 512^3 f64 per GPU, 27-point, ipc plain and
# --graph; the faults; weak scaling of the 7-point stencil over ipc; the 27-point over mpi; the
# set-up at 4 ranks beside haloport plan. 10 steps a run; every rank count verified.
# usage, from the repository root: bash results/2026-11-26-h200x4-four-gpus/run.sh BINDIR OUT
#   BINDIR holds haloport (or bins.tar.xz with it).
set -uo pipefail
dir=${1:?usage: run.sh BINDIR OUT}; out=${2:?usage: run.sh BINDIR OUT}
mkdir -p "$out"
RANKS=4 STEPS=10 POINTS=27 RUNS="ipc-plain ipc-graph" bash ci/gpu-eight.sh "$dir" "$out/weak27" weak
RANKS=4 bash ci/gpu-eight.sh "$dir" "$out/faults" faults
RANKS=4 STEPS=10 POINTS=7 RUNS=ipc-plain bash ci/gpu-eight.sh "$dir" "$out/weak7" weak
RANKS=4 STEPS=10 POINTS=27 RUNS=mpi-plain bash ci/gpu-eight.sh "$dir" "$out/weak27mpi" weak
RANKS=4 bash ci/gpu-eight.sh "$dir" "$out/setup" setup
