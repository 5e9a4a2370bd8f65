#!/usr/bin/env bash
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HALOPORT_REQUIRE_GPU=1 HALOPORT_BIN=$PWD/carry/haloport
out=$1; mkdir -p $out
carry/cuda-conformance --test-threads=1 > $out/conformance.log 2>&1; grep "test result" $out/conformance.log
carry/gpu-cuda-cli --test-threads=1 the_stencil > $out/gpu-cli.log 2>&1; grep "test result" $out/gpu-cli.log
timeout 100 carry/haloport pack-bench --backend cuda --local 512x512x512 --halo 1 --type f64 --reps 50 --runs 11 --json $out/pack-bench-512-f64.json
for tr in mpi ipc; do
  timeout 120 mpirun -np 2 carry/haloport stencil --backend cuda --transport $tr --grid 1024x512x512 --procs 2x1x1 --steps 30 --exchange-reps 50 --json $out/stencil-512-per-gpu-$tr.json
done
