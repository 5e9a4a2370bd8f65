"""What one exchange() call from Python spends outside Rust, part by part: the array library's
own answers haloport asks for on every call (the CUDA array interface, the DLPack device, the
current stream), timed alone with timeit on the same arrays, beside the whole call.

    mpirun -np 1 python bench/python/call_parts.py [--arrays cupy|torch] [--json FILE]

``--json FILE`` writes the figures in schema haloport-bench/1 (bench/README.md).
"""

import argparse
import timeit

from mpi4py import MPI

import haloport
from bench_json import device_name, header, write


def per_call_us(fn, number=2000):
    """Median over 5 repeats of `number` calls, microseconds per call."""
    times = sorted(timeit.repeat(fn, number=number, repeat=5))
    return times[len(times) // 2] / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arrays", choices=["cupy", "torch"], default="cupy")
    parser.add_argument("--json", help="write the results here (schema haloport-bench/1)")
    args = parser.parse_args()
    domain = haloport.Domain((32, 32, 32), dtype="float64", halo=1, periodic=(True, True, True))
    with haloport.Exchange(MPI.COMM_WORLD, domain, backend="cuda") as ex:
        if args.arrays == "cupy":
            import cupy

            u = cupy.zeros(ex.shape())
            stream = cupy.cuda.get_current_stream()
            parts = {
                "__cuda_array_interface__": lambda: u.__cuda_array_interface__,
                "__dlpack_device__()": lambda: u.__dlpack_device__(),
                "cupy.cuda.get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr,
            }
        else:
            import torch

            u = torch.zeros(ex.shape(), dtype=torch.float64, device="cuda")
            stream = torch.cuda.current_stream()
            parts = {
                "__cuda_array_interface__": lambda: u.__cuda_array_interface__,
                "__dlpack_device__()": lambda: u.__dlpack_device__(),
                "torch.cuda.current_stream(device).cuda_stream": lambda: torch.cuda.current_stream(u.device).cuda_stream,
            }
        ex.exchange(u)
        rows = []
        for name, fn in parts.items():
            us = per_call_us(fn)
            print(f"call_parts.py ({args.arrays}): {name}: {us:.2f} us")
            rows.append({"variant": name, "median_us": us})
        whole = per_call_us(lambda: ex.exchange(u), number=500)
        given = per_call_us(lambda: ex.exchange(u, stream=stream), number=500)
        print(f"call_parts.py ({args.arrays}): exchange(u): {whole:.2f} us; exchange(u, stream=...): {given:.2f} us")
        rows.append({"variant": "exchange(u)", "transport": ex.transport, "median_us": whole})
        rows.append({"variant": "exchange(u, stream=...)", "transport": ex.transport, "median_us": given})
        if args.json and MPI.COMM_WORLD.rank == 0:
            device = device_name("cuda", args.arrays, ex.device)
            doc = header(MPI.COMM_WORLD, "python-call-parts", "cuda", device, arrays=args.arrays,
                         grid=[32, 32, 32], results=rows)
            write(args.json, doc)


if __name__ == "__main__":
    main()
