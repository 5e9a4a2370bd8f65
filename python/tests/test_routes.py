"""Routes files (``Exchange(routes=...)``) and each neighbour's route and reason
(``Exchange.routes``), on the host backend with every rank on one node."""

import json
import pathlib
import tempfile

import pytest

import haloport
from conftest import check_all, everywhere, fill

# Within a node mpi before ipc: every neighbour that is not the rank itself takes mpi.
MPI_FIRST = {
    "schema": "haloport-routes/1",
    "within_node": ["mpi", "ipc"],
    "between_nodes": ["mpi"],
    "settings": {"strategy": "base", "threads": 128, "elems_per_thread": 2, "signalled_blocks": 8},
}
WHY_MPI_FIRST = "same node; routes given: the first of [mpi, ipc] that serves it"


@pytest.fixture
def folder():
    """A folder of this rank's own (every rank writes its own copy of a file)."""
    with tempfile.TemporaryDirectory(prefix="haloport-routes-") as d:
        yield pathlib.Path(d)


def write(folder, name, content):
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def route_problems(comm, routes, want):
    """What differs from `want(r)` (locality, link, why, passed_over) for each neighbour that is
    not this rank, and from ("itself", "local") for those that are."""
    problems = []
    for r in routes:
        if set(r) != {"direction", "peer", "locality", "link", "why", "passed_over"}:
            problems.append(f"keys {sorted(r)}")
        elif r["peer"] == comm.rank:
            if (r["locality"], r["link"], r["passed_over"]) != ("itself", "local", []):
                problems.append(repr(r))
        elif (r["locality"], r["link"], r["why"], r["passed_over"]) != want:
            problems.append(repr(r))
    if comm.size > 1 and all(r["peer"] == comm.rank for r in routes):
        problems.append("no neighbour is another rank")
    return problems


def test_a_routes_file_sets_auto_and_every_neighbour_takes_its_first_route_saying_why(comm, folder):
    path = write(folder, "routes.json", MPI_FIRST)
    domain = haloport.Domain((8, 6, 4), periodic=(True, False, True))
    # The file overrides the transport and strategy given, as RoutesFile::apply does.
    with haloport.Exchange(comm, domain, transport="ipc", strategy="tq", routes=str(path)) as ex:
        routes = ex.routes
        problems = route_problems(comm, routes, ("same-node", "mpi", WHY_MPI_FIRST, []))
        if (ex.transport, ex.strategy) != ("auto", "base"):
            problems.append(f"transport {ex.transport}, strategy {ex.strategy}")
        if [(r["direction"], r["peer"], r["link"]) for r in routes] != [
            (n.direction, n.rank, n.link) for n in ex.neighbours
        ]:
            problems.append("routes and neighbours differ in order, peers or links")
        everywhere(comm, not problems, "; ".join(problems))
        u = fill(ex, 0)
        ex.exchange(u)
        check_all(comm, ex, [u])
    # Plain data, kept after close, and a new list each time.
    assert ex.routes == routes
    ex.routes.clear()
    assert ex.routes == routes


def test_a_routes_file_is_taken_as_an_os_pathlike_and_without_settings_keeps_the_strategy(comm, folder):
    path = write(folder, "routes.json", {k: v for k, v in MPI_FIRST.items() if k != "settings"})
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4)), strategy="tq", routes=path) as ex:
        assert (ex.transport, ex.strategy) == ("auto", "tq")
        problems = route_problems(comm, ex.routes, ("same-node", "mpi", WHY_MPI_FIRST, []))
        everywhere(comm, not problems, "; ".join(problems))


def test_routes_without_a_file_say_the_transport_chose(comm):
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4))) as ex:
        problems = route_problems(
            comm, ex.routes, ("not-asked", "mpi", "transport mpi for every neighbour; host-staged", [])
        )
        problems += [repr(r) for r in ex.routes if r["peer"] == comm.rank and r["why"] != "the neighbour is this rank"]
        everywhere(comm, not problems, "; ".join(problems))


def test_a_route_that_cannot_serve_is_listed_in_passed_over_with_its_reason(comm, folder):
    """gpu-mpi first within the node: on the host backend MPI is not asked to take device
    memory (gpu_aware_mpi "auto"), so every link to another rank passes it over, saying why,
    and takes mpi."""
    path = write(folder, "routes.json", dict(MPI_FIRST, within_node=["gpu-mpi", "mpi"]))
    with haloport.Exchange(comm, haloport.Domain((8, 6, 4)), routes=path) as ex:
        passed = [{"route": "gpu-mpi", "why": "MPI does not take device memory at both ends"}]
        why = "same node; routes given: the first of [gpu-mpi, mpi] that serves it"
        problems = route_problems(comm, ex.routes, ("same-node", "mpi", why, passed))
        everywhere(comm, not problems, "; ".join(problems))


@pytest.mark.parametrize(
    "content, words",
    [
        (None, ["cannot be read"]),
        ('{"schema": "other/9", "within_node": ["mpi"], "between_nodes": ["mpi"]}', ["schema 'other/9'"]),
        ("not json", []),
        (dict(MPI_FIRST, between_nodes=["ipc"]), ["'ipc' cannot serve links between nodes"]),
    ],
    ids=["missing", "other-schema", "not-json", "ipc-between-nodes"],
)
def test_a_bad_routes_file_raises_invalid_input_naming_it_on_every_rank(comm, folder, content, words):
    path = folder / "missing.json" if content is None else write(folder, "routes.json", content)
    with pytest.raises(haloport.InvalidInputError) as err:
        haloport.Exchange(comm, haloport.Domain((8, 6, 4)), routes=path)
    message = str(err.value)
    assert str(path) in message, message
    for word in words:
        assert word in message


def test_one_rank_with_a_bad_routes_file_fails_every_rank(comm, folder):
    good = write(folder, "routes.json", MPI_FIRST)
    path = folder / "missing.json" if comm.rank == 0 else good
    expected = haloport.InvalidInputError if comm.rank == 0 else haloport.OtherRankError
    with pytest.raises(expected) as err:
        haloport.Exchange(comm, haloport.Domain((8, 6, 4)), routes=path)
    if comm.rank != 0:
        assert "rank 0" in str(err.value) and "routes file" in str(err.value)


def test_routes_must_be_a_path(comm):
    with pytest.raises(TypeError):
        haloport.Exchange(comm, haloport.Domain((8, 6, 4)), routes=3)  # type: ignore[arg-type]
