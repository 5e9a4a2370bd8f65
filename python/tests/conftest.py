"""Shared helpers of the MPI test suite (run by ci/python-test.sh under mpirun -np 2 and 4).

Every test runs on every rank. A check whose outcome could differ between ranks goes through
:func:`everywhere`, so all ranks pass or fail it together and the next test's collectives stay
matched; pytest-timeout (thread method, see pyproject.toml) ends a rank that still hangs, and
mpirun then ends the job.
"""

import pytest
from mpi4py import MPI

from cells import cell_values, expected, fill, sentinel, wrong_cells  # noqa: F401


@pytest.fixture
def comm():
    """A communicator of every rank, private to the test (freed after it)."""
    c = MPI.COMM_WORLD.Dup()
    yield c
    c.Free()


def everywhere(comm, ok, message=""):
    """Asserts that `ok` holds on every rank; every rank fails, naming the ranks where not."""
    results = comm.allgather((bool(ok), message))
    bad = [(r, m) for r, (o, m) in enumerate(results) if not o]
    assert not bad, "; ".join(f"rank {r}: {m}" for r, m in bad)


def check_all(comm, ex, arrays):
    """Every cell of every array as the declaration says, on every rank."""
    problems = wrong_cells(ex, arrays)
    everywhere(comm, not problems, "; ".join(problems))
