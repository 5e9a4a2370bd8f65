#!/usr/bin/env bash
# Checks the Python package (its extension crate is linted with the workspace, by ci/test.sh):
# the type stubs against the extension, then the pytest suite on the host backend with NumPy arrays under
# `mpirun -np 2` and `-np 4`, and examples/python/jacobi.py on 1, 2 and 4 ranks. Run
# ci/python-setup.sh first (it installs the package the way
# python/README.md says). Rank 0's pytest output is printed; the other ranks' only on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
# The type stubs say what the extension has (its cache kept out of the tree).
(cd "$(mktemp -d)" && "$OLDPWD/.venv/bin/python" -m mypy.stubtest haloport._native haloport.errors)

if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
status=0
for np in 2 4; do
    echo "python-test: mpirun -np $np pytest python/tests"
    # Each test has its own time-out (pyproject.toml); this one bounds the whole run.
    timeout 300 mpirun --oversubscribe -np "$np" bash -c '
        rank=${OMPI_COMM_WORLD_RANK:-0}
        if [ "$rank" = 0 ]; then
            exec .venv/bin/python -m pytest -q -ra --color=no python/tests
        else
            exec .venv/bin/python -m pytest -q -ra --color=no python/tests >"$0/rank-$rank.log" 2>&1
        fi' "$logs" || {
        status=$?
        echo "python-test: FAILED under mpirun -np $np (exit $status); the other ranks said:"
        for f in "$logs"/rank-*.log; do
            [ -e "$f" ] && { echo "--- $(basename "$f")"; tail -n 40 "$f"; }
        done
    }
done
# The example, as python/README.md runs it.
for np in 1 2 4; do
    timeout 120 mpirun --oversubscribe -np "$np" .venv/bin/python examples/python/jacobi.py || status=$?
done
exit "$status"
