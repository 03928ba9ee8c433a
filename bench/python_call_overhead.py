#!/usr/bin/env python3
"""The Python half of call_overhead_bench: the time of one call of a compiled operator
(C = A + B) on loom.empty arrays, then zero-copy on a 100 MB tensor: a copy kernel B = A over
25 M float32s called on loom.empty arrays, on torch tensors (through DLPack) and on unaligned
numpy views (which Loom must copy), with the time of a call and how much the process's peak
memory grows in each case.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_call_overhead.py [--elements N] [--calls K]
"""
import argparse
import resource
import time

import numpy as np

import loom
from loom import te


def vadd(n):
    a = te.placeholder((n,), name="A")
    b = te.placeholder((n,), name="B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    return loom.build(loom.create_schedule(c), [a, b, c], name="vadd")


def copy_kernel(n):
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i], name="B")
    s = loom.create_schedule(b)
    outer, inner = s[b].split(b.op.axis[0], factor=16)
    s[b].vectorize(inner)
    s[b].parallel(outer)
    return loom.build(s, [a, b], name="copy")


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def timed(f, *args, repeat=5):
    f(*args)
    t0 = time.perf_counter()
    for _ in range(repeat):
        f(*args)
    return (time.perf_counter() - t0) / repeat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=16)
    ap.add_argument("--calls", type=int, default=50000)
    args = ap.parse_args()

    f = vadd(args.elements)
    a, b, c = (loom.empty((args.elements,)) for _ in range(3))
    a[:] = 1
    b[:] = 2
    for _ in range(1000):
        f(a, b, c)
    t0 = time.perf_counter()
    for _ in range(args.calls):
        f(a, b, c)
    ns = (time.perf_counter() - t0) / args.calls * 1e9
    assert f.copies == 0 and c[0] == 3
    print(f"python_call_ns {ns:.1f}")

    n = 25 * 1024 * 1024  # 100 MB of float32
    g = copy_kernel(n)
    print(f"zero-copy: B = A over {n} float32 ({n * 4 / 1e6:.0f} MB)")
    src, dst = loom.empty((n,)), loom.empty((n,))
    src[:] = 1.5
    dst[:] = 0
    base = peak_mb()
    t = timed(g, src, dst)
    grew = peak_mb() - base
    assert g.copies == 0 and dst[-1] == 1.5
    print(f"  loom.empty arrays: {t * 1e3:.1f} ms per call, {g.copies} arguments copied, peak memory +{grew:.0f} MB")
    try:
        import torch
        ts, td = torch.full((n,), 2.5), torch.zeros(n)
        base, before = peak_mb(), g.copies
        t = timed(g, ts, td)
        grew = peak_mb() - base
        assert g.copies == before and td[-1].item() == 2.5
        print(f"  torch tensors (DLPack): {t * 1e3:.1f} ms per call, {g.copies - before} arguments copied, "
              f"peak memory +{grew:.0f} MB")
    except ImportError:
        print("  torch tensors: torch not importable")
    raw_src = np.empty(n + 1, np.float32)[1:]  # 4 bytes past an aligned start: never 64-byte aligned
    raw_dst = np.empty(n + 1, np.float32)[1:]
    raw_src[:] = 3.5
    raw_dst[:] = 0
    base, before = peak_mb(), g.copies
    t = timed(g, raw_src, raw_dst)
    grew = peak_mb() - base
    assert raw_dst[-1] == 3.5
    print(f"  unaligned numpy views: {t * 1e3:.1f} ms per call, {(g.copies - before) // 6} arguments copied per call, "
          f"peak memory +{grew:.0f} MB")


if __name__ == "__main__":
    main()
