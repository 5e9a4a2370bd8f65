#!/usr/bin/env bash
# The test suite: formatting, clippy and rustdoc (-D warnings), unit tests, the host backend under
# mpirun -np 2/3/4, bad-input and fault tests, with the cuda and hip features built (kernels
# compiled by nvcc and by hipcc, and the embedded fatbin and code objects checked), and the C ABI
# installed with its C and Fortran programs run (ci/capi-test.sh), and the Python package
# installed and tested (ci/python-setup.sh, ci/python-test.sh); GPU tests print "SKIPPED: no
# CUDA device" or "SKIPPED: no AMD GPU" where there is none. Needs what ci/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# The kernels for fewer targets than a default build's, since each costs about a minute of
# the compiler here: AMD's gfx90a (wave64, the CDNA family's) and gfx1030 (wave32, RDNA's), and
# NVIDIA's sm_90 with its PTX (the sources have no per-architecture code). Every kernel in every
# image, and the AMD kernels' scratch, are checked for each.
export HALOPORT_HIP_ARCHS="${HALOPORT_HIP_ARCHS:-gfx90a;gfx1030}"
export HALOPORT_CUDA_ARCHS="${HALOPORT_CUDA_ARCHS:-90}"
# Each part's start, with the seconds spent so far: CI must end within 30 minutes.
part() { echo "ci/test.sh: $1 (after ${SECONDS} s)"; }
part "formatting and clippy"
cargo fmt --all --check
cargo clippy --workspace --all-targets --features cuda,hip -- -D warnings
part "the API docs"
# The API docs (the crate's front page has the worked example, which the doc tests run): no
# broken or private links.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace
part "the workspace's tests"
# Most tests wait on MPI ranks and time-outs rather than compute, so cargo-nextest runs them
# side by side, across test binaries (4 at a time on 2 cores). The MPI scenarios start
# themselves under mpirun (no libtest harness) and the doc tests are rustdoc's: cargo runs both
# from the same build (every build here selects the whole workspace, or cargo would resolve
# features anew and compile again), with a filter only doc tests' names match ("(line N)"), so
# the other binaries run nothing twice. Without nextest, cargo test runs everything, one binary
# after another.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --features cuda,hip --test-threads 4 --no-fail-fast \
        --success-output final -E 'not binary(library_mpi)'
    cargo test --workspace --features cuda,hip -- '(line '
else
    cargo test --workspace --features cuda,hip -- --show-output
fi
part "the C ABI"
# The C ABI installed as the README says, its C and Fortran examples and its error paths
# under mpirun (the library built with the whole workspace, as the tests were: their build's
# artifacts serve it).
HALOPORT_CMAKE_ARGS="-DHALOPORT_FEATURES=host,cuda,hip -DHALOPORT_CARGO_PROFILE=dev -DHALOPORT_CARGO_WORKSPACE=ON -DHALOPORT_CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}" \
    bash ci/capi-test.sh build/prefix
part "HIP on NVIDIA"
# HIP on NVIDIA without a GPU: the layer, its mapping and plumbing tests, the HIP
# backend through it.
bash ci/hip-nvidia-test.sh
part "the Python package"
# The Python package installed as the README says, its tests under mpirun -np 2 and 4, and
# examples/python/jacobi.py.
# (Built with the dev profile, whose artifacts the tests' build already holds in part; a user's
# `pip install` builds the release one.)
MATURIN_PEP517_ARGS="--profile dev" bash ci/python-setup.sh
bash ci/python-test.sh
part "a host-only build"
# The main build has every backend; refusing one that is not built in needs a build without
# the GPU backends, so that test runs once more in a host-only build.
# (The workspace selected, as in every build here, so that only the root package's crates
# build again, not their dependencies.)
cargo test --workspace --no-default-features --features host --test bad_input \
    a_backend_not_built_in_is_refused -- --show-output
part "all passed"
