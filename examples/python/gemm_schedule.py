#!/usr/bin/env python3
"""A GEMM scheduled step by step with loom.te, as TVM's tutorial does: the plain loops, then
blocked for the cache, then vectorized and parallel; each step's loop IR printed, built for this
CPU, checked against numpy (OpenBLAS) and timed beside it.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/python/gemm_schedule.py [--size 512] [--show-ir]
"""
import argparse
import time

import numpy as np

import loom
from loom import te


def definition(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def plain(n):
    A, B, C = definition(n)
    return loom.create_schedule(C), [A, B, C]


def blocked(n, bn=32):
    A, B, C = definition(n)
    s = loom.create_schedule(C)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(io, jo, ko, ki, ii, ji)
    return s, [A, B, C]


def vectorized_parallel(n, bn=32):
    A, B, C = definition(n)
    s = loom.create_schedule(C)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, [A, B, C]


def seconds(f, *args, repeat=3):
    f(*args)
    t0 = time.perf_counter()
    for _ in range(repeat):
        f(*args)
    return (time.perf_counter() - t0) / repeat


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512, help="n of the n x n GEMM (default 512; a multiple of 32)")
    ap.add_argument("--show-ir", action="store_true", help="print each step's loop IR")
    args = ap.parse_args()
    n = args.size
    if n % 32:
        ap.error("--size must be a multiple of 32")
    a, b = loom.empty((n, n)), loom.empty((n, n))
    a[:] = np.random.default_rng(0).standard_normal((n, n))
    b[:] = np.random.default_rng(1).standard_normal((n, n))
    want = a @ b
    t_numpy = seconds(np.matmul, a, b)
    flops = 2.0 * n ** 3
    print(f"{n}x{n} float32 GEMM; numpy (OpenBLAS): {flops / t_numpy / 1e9:.1f} GFLOP/s")
    for name, make in (("plain loops", plain), ("blocked 32x32", blocked),
                       ("blocked, vectorized, parallel", vectorized_parallel)):
        s, tensors = make(n)
        if args.show_ir:
            print(loom.lower(s, tensors, name="gemm"))
        f = loom.build(s, tensors, name="gemm")
        c = loom.empty((n, n))
        f(a, b, c)
        err = np.max(np.abs(c - want)) / np.max(np.abs(want))
        assert err < 1e-4, f"{name}: error {err}"
        t = seconds(f, a, b, c, repeat=1 if name == "plain loops" else 3)
        print(f"  {name:<30} {flops / t / 1e9:8.1f} GFLOP/s  ({t_numpy / t:.2f}x numpy), error {err:.1e}")


if __name__ == "__main__":
    main()
