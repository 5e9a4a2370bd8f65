"""What one exchange() call from Python spends outside Rust, part by part: the array library's
own answers haloport asks for on every call (the CUDA array interface, the DLPack device, the
current stream), timed alone with timeit on the same arrays, beside the whole call.

    mpirun -np 1 python python/bench/call_parts.py [--arrays cupy|torch]
"""

import argparse
import timeit

from mpi4py import MPI

import haloport


def per_call_us(fn, number=2000):
    """Median over 5 repeats of `number` calls, microseconds per call."""
    times = sorted(timeit.repeat(fn, number=number, repeat=5))
    return times[len(times) // 2] / number * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arrays", choices=["cupy", "torch"], default="cupy")
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
        for name, fn in parts.items():
            print(f"call_parts.py ({args.arrays}): {name}: {per_call_us(fn):.2f} us")
        whole = per_call_us(lambda: ex.exchange(u), number=500)
        given = per_call_us(lambda: ex.exchange(u, stream=stream), number=500)
        print(f"call_parts.py ({args.arrays}): exchange(u): {whole:.2f} us; exchange(u, stream=...): {given:.2f} us")


if __name__ == "__main__":
    main()
