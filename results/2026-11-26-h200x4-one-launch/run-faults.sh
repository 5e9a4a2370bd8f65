#!/usr/bin/env bash
# The faults on 4 GPUs again, after run.sh's stopped rank ran to the test's limit: the build of
# the bounded gathers (the stencil's final fields and every rank's timings give up after the
# time-out) and ci/gpu-eight.sh stopping the rank while it still steps.
# usage, from the repository root: bash results/2026-11-26-h200x4-one-launch/run-faults.sh BINDIR OUT
set -uo pipefail
dir=${1:?usage: run-faults.sh BINDIR OUT}; out=${2:?usage: run-faults.sh BINDIR OUT}
mkdir -p "$out"
RANKS=4 bash ci/gpu-eight.sh "$dir" "$out/faults" faults
