"""The time of one ``Exchange.exchange()`` call from Python, to set beside the same call from
Rust: ``python/examples/exchange_overhead.rs`` times ``HaloExchange::exchange`` (a Rust
program's call) and ``ForeignExchange::exchange`` (what this package calls into) back to back
on the same declaration, the same way. Python minus the foreign call is what the binding costs
per call (reading and checking the arrays' interfaces, finding the stream, releasing the GIL).

    mpirun -np 1 exchange_overhead --backend cuda --json rust-cuda.json
    mpirun -np 1 python bench/python/overhead.py --backend cuda --rust-json rust-cuda.json

On CUDA the arrays are CuPy's (``--arrays torch`` for PyTorch tensors) and the calls run on a
non-blocking stream of the array library, as the Rust side runs on a stream of its own. With
``--rust-json`` (exchange_overhead's JSON, or ``haloport stencil --json``'s) it prints the
differences. ``--json FILE`` writes the figures (and the Rust side's, with ``--rust-json``) in
schema haloport-bench/1 (bench/README.md).
"""

import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

import haloport
from bench_json import device_name, header, write


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="host")
    parser.add_argument("--arrays", default="cupy", choices=["cupy", "torch"], help="on CUDA")
    parser.add_argument("--grid", default="32x32x32")
    parser.add_argument("--transport", default="mpi")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--rust-json", help="haloport stencil's JSON for the same declaration")
    parser.add_argument("--json", help="write the results here (schema haloport-bench/1)")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    grid = tuple(int(n) for n in args.grid.split("x"))
    domain = haloport.Domain(grid, dtype="float64", halo=1, periodic=True)
    with haloport.Exchange(comm, domain, backend=args.backend, transport=args.transport) as ex:
        if args.backend == "host":
            u = np.zeros(ex.shape())
            stream, sync, label = None, (lambda: None), "numpy"
        elif args.arrays == "cupy":
            import cupy

            cupy.cuda.Device(ex.device).use()
            stream = cupy.cuda.Stream(non_blocking=True)
            u = cupy.zeros(ex.shape())
            cupy.cuda.Device().synchronize()  # the zeros, queued on the default stream
            sync, label = stream.synchronize, f"cupy {cupy.__version__}"
        else:
            import torch

            stream = torch.cuda.Stream(device=ex.device)
            u = torch.zeros(ex.shape(), dtype=torch.float64, device=f"cuda:{ex.device}")
            torch.cuda.synchronize()
            sync, label = stream.synchronize, f"torch {torch.__version__}"
        calls = {
            # The stream as the library's current one (the default) and given explicitly.
            "current stream": lambda: ex.exchange(u),
            "stream given": lambda: ex.exchange(u, stream=stream),
        }
        results = {}
        for name, call in calls.items():
            context = stream if (stream is not None and args.arrays == "cupy") else None
            if stream is not None and args.arrays == "torch":
                import torch

                context = torch.cuda.stream(stream)
            if context is not None:
                context.__enter__()
            try:
                for _ in range(min(200, args.reps)):
                    call()
                sync()
                comm.Barrier()
                times = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - t0)
                sync()
            finally:
                if context is not None:
                    context.__exit__(None, None, None)
            results[name] = (statistics.median(times) * 1e6, min(times) * 1e6)
    if comm.rank != 0:
        return
    arrays = "numpy" if args.backend == "host" else args.arrays
    print(
        f"overhead.py: {comm.size} rank(s), {args.backend} backend, {label} arrays, grid "
        f"{args.grid} f64 periodic halo 1, transport {args.transport}, {args.reps} calls"
    )
    rows = []
    for name, (median, least) in results.items():
        print(f"  exchange() from Python ({name}): median {median:.1f} us, min {least:.1f} us")
        rows.append(
            {
                "variant": "python-" + name.replace(" ", "-"),
                "transport": args.transport,
                "median_us": median,
                "min_us": least,
            }
        )
    if args.rust_json:
        with open(args.rust_json) as f:
            rust = json.load(f)
        median = results["stream given"][0]
        if "rust_median_us" in rust:
            for name, key, variant in (
                ("HaloExchange::exchange", "rust", "rust-halo-exchange"),
                ("ForeignExchange::exchange", "foreign", "rust-foreign-exchange"),
            ):
                them = rust[f"{key}_median_us"]
                print(f"  {name} from Rust: median {them:.1f} us; Python - Rust: {median - them:+.1f} us per call")
                rows.append(
                    {
                        "variant": variant,
                        "transport": args.transport,
                        "median_us": them,
                        "min_us": rust.get(f"{key}_min_us"),
                        "python_minus_this_us": median - them,
                    }
                )
        else:
            them = rust["exchange_median_us"]
            print(f"  haloport stencil's exchange: median {them:.1f} us; Python - Rust: {median - them:+.1f} us")
            rows.append(
                {
                    "variant": "rust-stencil-exchange",
                    "transport": rust.get("transport", args.transport),
                    "median_us": them,
                    "python_minus_this_us": median - them,
                }
            )
    if args.json:
        doc = header(
            comm,
            "python-overhead",
            args.backend,
            device_name(args.backend, arrays, ex.device),
            arrays=label,
            grid=list(grid),
            transport=args.transport,
            reps=args.reps,
            rust_json=args.rust_json,
            results=rows,
        )
        write(args.json, doc)

if __name__ == "__main__":
    main()
