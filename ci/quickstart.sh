#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, and run a verified baseline exchange on two
# MPI ranks. Uses the host backend (no GPU needed); pass BACKEND=cuda on an NVIDIA machine with
# a binary built with --features cuda.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p target/quickstart
mpirun --oversubscribe -np 2 target/release/haloport run \
    --backend "${BACKEND:-host}" --variant base-nb-wait --workload thesis-9 --pattern pairwise \
    --runs 10 --json target/quickstart/result.json
