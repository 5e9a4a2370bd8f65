#!/usr/bin/env bash
# The C ABI as a user gets it: install the library as the README says (CMake, into a prefix),
# build the C and Fortran examples and the C error-path, routes and fused-mode tests against the
# installed library through pkg-config, build the C example once more through the CMake package,
# and run them under mpirun -np 1, 2 and 4 (the error, routes and fused-mode tests on 2 ranks).
# Each example verifies its result against one rank computing the whole grid and exits non-zero
# otherwise.
#
# usage: ci/capi-test.sh [PREFIX]   (default build/prefix). Extra CMake options for the
# library's build come from HALOPORT_CMAKE_ARGS (the test suite reuses its own cargo build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=$(mkdir -p "${1:-build/prefix}" && cd "${1:-build/prefix}" && pwd)
build=$root/build/capi-test
mkdir -p "$build"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# shellcheck disable=SC2086 # HALOPORT_CMAKE_ARGS is a list of options
cmake -S capi -B build/capi ${HALOPORT_CMAKE_ARGS:-} > "$build/configure.log"
cmake --build build/capi
cmake --install build/capi --prefix "$prefix" > "$build/install.log"
echo "capi-test: installed under $prefix: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig:${PKG_CONFIG_PATH:-}
export LD_LIBRARY_PATH=$prefix/lib:${LD_LIBRARY_PATH:-}
mpicc -std=c99 -O2 -Wall -Wextra -Werror examples/c/jacobi.c $(pkg-config --cflags --libs haloport) -o "$build/c-jacobi"
mpicc -std=c99 -O2 -Wall -Wextra -Werror -pthread capi/tests/c/errors.c $(pkg-config --cflags --libs haloport) -o "$build/c-errors"
mpicc -std=c99 -O2 -Wall -Wextra -Werror capi/tests/c/routes.c $(pkg-config --cflags --libs haloport) -o "$build/c-routes"
mpicc -std=c99 -O2 -Wall -Wextra -Werror capi/tests/c/never_freed.c $(pkg-config --cflags --libs haloport) -o "$build/c-never-freed"
mpicc -std=c11 -O2 -Wall -Wextra -Werror capi/tests/c/fused.c $(pkg-config --cflags --libs haloport) -o "$build/c-fused"
# The header from C++ too (extern "C", no C-only constructs; MPI's own C++ bindings left
# out, whose casts warn).
echo '#include <haloport.h>
int main() { return haloport_version_number() == HALOPORT_VERSION_NUMBER ? 0 : 1; }' > "$build/cxx.cpp"
mpicxx -std=c++17 -Wall -Wextra -Werror -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX "$build/cxx.cpp" $(pkg-config --cflags --libs haloport) -o "$build/cxx-version"
"$build/cxx-version"
mpif90 -O2 -Wall examples/fortran/jacobi.f90 $(pkg-config --cflags --libs haloport-fortran haloport) -o "$build/f-jacobi"
mpif90 -O2 -Wall capi/tests/fortran/api.f90 $(pkg-config --cflags --libs haloport-fortran haloport) -o "$build/f-api"
# The same C example through find_package(haloport CONFIG).
cmake -S examples/c -B "$build/cmake-consumer" -DCMAKE_PREFIX_PATH="$prefix" > "$build/consumer.log"
cmake --build "$build/cmake-consumer" > "$build/consumer-build.log"

run() { echo "capi-test: mpirun -np $*"; timeout 300 mpirun --oversubscribe -np "$@"; }
for np in 1 2 4; do
    run "$np" "$build/c-jacobi"
    run "$np" "$build/f-jacobi"
done
run 2 "$build/cmake-consumer/jacobi"
run 2 "$build/c-errors"
run 2 "$build/c-routes"
run 2 "$build/c-fused"
run 2 "$build/f-api"
# A program that never frees its handles ends with MPI_Finalize: exit 0 on every rank, and
# haloport says what it left to the process's exit.
run 2 "$build/c-never-freed" 2> "$build/never-freed.err"
grep -q "left to the process's exit" "$build/never-freed.err" ||
    { cat "$build/never-freed.err"; echo "capi-test: the never-freed exchange was not reported"; exit 1; }
echo "capi-test: passed"
