#!/usr/bin/env bash
# Issue 23: the figures of the session's last build on one GPU (the compute alone without the
# ready word and fix-up; f32 rows of 514 in the lanes' off form), by the same job as
# ../2026-11-27-h200-final/run.sh (checks, sanitizers, the step at 512^3, the sweep, scaling).
# usage, from the repository root: bash results/2026-11-27-h200-final2/run.sh BINDIR OUT
exec bash "$(dirname "$0")/../2026-11-27-h200-final/run.sh" "$@"
