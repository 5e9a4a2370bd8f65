#!/usr/bin/env bash
# Installs the Python package and what its tests need into the repository's .venv (made by
# ci/setup.sh, which also installs OpenMPI's headers that mpi4py builds against): numpy, mpi4py,
# pytest, pytest-timeout, mypy (its stubtest checks the type stubs), and haloport itself with
# `pip install ./python`, as python/README.md tells a user. Idempotent: pip skips what is
# installed; the package is rebuilt (incrementally, in the workspace's target directory) so that
# the tests always run the tree's code.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
[ -d .venv ] || python3 -m venv .venv
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
.venv/bin/python -c 'import numpy, mpi4py, pytest, pytest_timeout, mypy' 2>/dev/null ||
    "${pip[@]}" numpy mpi4py pytest pytest-timeout mypy
# The extension builds in the workspace's target directory, which stays between runs.
"${pip[@]}" --force-reinstall --no-deps ./python
.venv/bin/python -c 'import haloport; print("python-setup: haloport", haloport.__version__, "backends:", haloport.backends())'
