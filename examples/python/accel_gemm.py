"""An int8 matrix multiply scheduled for Loom's accelerator from Python, in the manner of VTA's GEMM
tutorial: the operands are copied into the scratchpads with DMA, the block product is tensorized
onto the accelerator's GEMM instruction, the requantization (shift, clamp, narrow) runs on its ALU
in the accumulator scope, and output-channel tiles split over virtual threads so one context's
loads overlap the other's compute. Each schedule is checked against numpy bit for bit on the
functional simulator and timed on the performance model (and the RTL with --rtl).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/accel_gemm.py [--size 64] [--rtl]
"""
import argparse

import numpy as np

import loom
from loom import te


def gemm(config, M, N, K, shift=8):
    """The blocked int8 GEMM with requantization: C[m, n] = int8(clip((A x W^T)[m, n] >> shift)),
    with A as [M/batch, K/block_in, batch, block_in] and W as [N/block_out, K/block_in, block_out,
    block_in] blocks. Returns the placeholders and every stage."""
    b, bi, bo = config.batch, config.block_in, config.block_out
    A = te.placeholder((M // b, K // bi, b, bi), name="A", dtype="int8")
    W = te.placeholder((N // bo, K // bi, bo, bi), name="W", dtype="int8")
    ko = te.reduce_axis((0, K // bi), name="ko")
    ki = te.reduce_axis((0, bi), name="ki")
    acc = te.compute((M // b, N // bo, b, bo),
                     lambda mo, no, mi, ni: te.sum(A[mo, ko, mi, ki].astype("int32") *
                                                   W[no, ko, ni, ki].astype("int32"), axis=[ko, ki]),
                     name="acc")
    shr = te.compute(acc.shape, lambda *i: acc[i] // (1 << shift), name="shr")  # an arithmetic shift
    lo = te.compute(acc.shape, lambda *i: te.maximum(shr[i], -128), name="lo")
    hi = te.compute(acc.shape, lambda *i: te.minimum(lo[i], 127), name="hi")
    C = te.compute(acc.shape, lambda *i: hi[i].astype("int8"), name="C")
    return A, W, C, (acc, shr, lo, hi)


def schedule(config, A, W, C, stages, *, n_tile=1, virtual_threads=1):
    """The accelerator's schedule: per tile of `n_tile` output blocks (split over `virtual_threads`
    contexts), the accumulator tile lives in the accumulator scratchpad, each reduction block's
    operands are loaded by DMA, the block product is the GEMM instruction, the ALU requantizes and
    the tile is stored by DMA."""
    acc, shr, lo, hi = stages
    s = loom.create_schedule(C)
    mo, no, mi, ni = C.op.axis
    no_o, no_i = s[C].split(no, factor=n_tile)
    if virtual_threads > 1:
        vt, no_o = s[C].split(no_o, nparts=virtual_threads)
        s[C].reorder(mo, vt, no_o, no_i, mi, ni)
        s[C].bind(vt, "vthread")
    s[C].pragma(no_i, "dma_copy")  # store the tile
    s[acc].set_scope(loom.accel.SCOPE_ACCUM)
    s[acc].compute_at(s[C], no_o)
    for t in (shr, lo, hi):
        s[t].set_scope(loom.accel.SCOPE_ACCUM)
        s[t].compute_at(s[C], no_o)
        s[t].pragma(s[t].op.axis[0], "alu")
    ko, ki = acc.op.reduce_axis
    s[acc].reorder(ko, *acc.op.axis, ki)
    s[acc].tensorize(acc.op.axis[2], loom.accel.gemm_intrin(config))
    for t, scope in ((A, loom.accel.SCOPE_INPUT), (W, loom.accel.SCOPE_WEIGHT)):
        buf = s.cache_read(t, scope, [acc])
        s[buf].compute_at(s[acc], ko)
        s[buf].pragma(s[buf].op.axis[0], "dma_copy")
    return s


def reference(a, w, shift=8):
    """numpy: the same product on the blocked layouts."""
    acc = np.einsum("mkbi,nkoi->mnbo", a.astype(np.int32), w.astype(np.int32))
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64, help="N = K = size (multiples of the blocks), M = one block")
    ap.add_argument("--rtl", action="store_true", help="also run each schedule on the RTL (Verilator)")
    ap.add_argument("--show-ir", action="store_true", help="print the last schedule's loops")
    args = ap.parse_args()
    config = loom.accel.Config()
    M, N, K = config.batch, args.size, args.size
    A, W, C, stages = gemm(config, M, N, K)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, A.shape, dtype=np.int8)
    w = rng.integers(-128, 128, W.shape, dtype=np.int8)
    want = reference(a, w)
    blocks = N // config.block_out
    variants = [("one block per tile", 1, 1)]
    if blocks >= 2:
        variants.append(("two blocks per tile", 2, 1))
        variants.append(("two virtual threads", 1, 2))
    perf = loom.accel.Device("perf", config=config)
    rtl = loom.accel.Device("rtl", config=config) if args.rtl else None
    for name, n_tile, vt in variants:
        s = schedule(config, A, W, C, stages, n_tile=n_tile, virtual_threads=vt)
        f = loom.build(s, [A, W, C], target="accel", config=config, name="gemm")
        got = f(a, w)  # on the functional simulator
        if not np.array_equal(got, want):
            raise SystemExit(f"{name}: the accelerator's result differs from numpy")
        f(a, w, device=perf)
        cycles = f.stats["cycles"]
        line = f"{name:22s} {f.instruction_count:6d} instructions  {cycles:8d} cycles (perf model)"
        if rtl is not None:
            f(a, w, device=rtl)
            line += f"  {f.stats['cycles']:8d} cycles (RTL)"
        print(line + "  equal to numpy")
    if args.show_ir:
        print(loom.lower(s, [A, W, C], "gemm", target="accel"))


if __name__ == "__main__":
    main()
