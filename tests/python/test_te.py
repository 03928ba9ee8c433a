"""loom.te, schedules, loom.lower and loom.build from Python: a TVM-style GEMM schedule compiled
for the CPU against numpy's matmul, arrays passed without copies (loom.empty, torch tensors
through DLPack) or copied when they must be, the schedule primitives in the printed IR, and the
errors a caller gets."""
import numpy as np
import pytest
import torch

import loom
from loom import te

N, K, M = 64, 48, 40


def gemm():
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def scheduled_gemm():
    A, B, C = gemm()
    s = loom.create_schedule(C)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 16, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ki, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    return s, (A, B, C)


def test_gemm_schedule_matches_numpy():
    s, args = scheduled_gemm()
    f = loom.build(s, args, name="gemm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, K)).astype(np.float32)
    b = rng.standard_normal((K, M)).astype(np.float32)
    c = np.zeros((N, M), np.float32)
    f(a, b, c)  # numpy arrays: copied in when not 64-byte aligned, the output copied back
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(f(a, b), a @ b, rtol=1e-5, atol=1e-5)  # inputs alone: the output returned
    assert [x["name"] for x in f.args] == ["A", "B", "C"] and f.args[2]["shape"] == (N, M)


def test_arrays_pass_without_copies():
    s, args = scheduled_gemm()
    f = loom.build(s, args)
    a, b, c = loom.empty((N, K)), loom.empty((K, M)), loom.empty((N, M))
    a[:] = np.arange(N * K, dtype=np.float32).reshape(N, K) / 100
    b[:] = 1
    f(a, b, c)
    assert f.copies == 0
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    # torch tensors through DLPack: the output written in the tensor's own memory
    ta, tb, tc = torch.tensor(np.array(a)), torch.ones(K, M), torch.zeros(N, M)  # PyTorch aligns to 64 bytes
    f(ta, tb, tc)
    assert f.copies == 0
    np.testing.assert_allclose(tc.numpy(), a @ b, rtol=1e-5)
    # a transposed (strided) torch tensor is read through numpy and copied, and still right
    tt = torch.zeros(M, N).t()
    f(ta, tb, tt)
    assert f.copies == 1
    np.testing.assert_allclose(tt.numpy(), a @ b, rtol=1e-5)
    # and back: a Loom array handed to torch without a copy
    back = torch.from_dlpack(c)
    assert back.data_ptr() == c.ctypes.data
    x = loom.from_dlpack(tc)
    assert x.ctypes.data == tc.data_ptr()
    # an unaligned (contiguous) array is copied, and still right
    before = f.copies
    odd = np.empty(N * K + 1, np.float32)[1:].reshape(N, K)
    odd[:] = a
    out = loom.empty((N, M))
    f(odd, b, out)
    assert f.copies == before + 1
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    # a strided output is copied in and back
    wide = np.zeros((N, M + 1), np.float32)
    before = f.copies
    f(a, b, wide[:, :M])
    assert f.copies > before
    np.testing.assert_allclose(wide[:, :M], a @ b, rtol=1e-5)


def test_lowered_ir_shows_the_schedule():
    s, args = scheduled_gemm()
    text = str(loom.lower(s, args, name="gemm"))
    assert "parallel" in text and "ramp" in text  # the parallel outer loop and the vectorized inner one
    assert "C.local" not in text
    A, B, C = args
    s2 = loom.create_schedule(C)
    CL = s2.cache_write(C, "local")
    s2[CL].compute_at(s2[C], C.op.axis[0])
    assert "C.local" in str(loom.lower(s2, [A, B, C]))
    s3 = loom.create_schedule(C)
    bx, tx = s3[C].split(C.op.axis[0], factor=32)
    s3[C].bind(bx, "blockIdx.x")
    s3[C].bind(tx, "threadIdx.x")
    s3[C].pragma(C.op.axis[1], "unroll_explicit", 0)
    gpu = str(loom.lower(s3, [A, B, C], target="cuda"))
    assert "blockIdx.x" in gpu and "threadIdx.x" in gpu


def test_tensorize_with_a_declared_intrinsic():
    A, B, C = gemm()
    # The intrinsic: a 4x4 block of C over the whole reduction.
    a = te.placeholder((4, K), name="a")
    b = te.placeholder((K, 4), name="b")
    kk = te.reduce_axis((0, K), name="kk")
    c = te.compute((4, 4), lambda i, j: te.sum(a[i, kk] * b[kk, j], axis=kk), name="c")
    intrin = te.decl_tensor_intrin(c, [a, b], "gemm4x4")
    s = loom.create_schedule(C)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].reorder(io, jo, ii, ji, C.op.reduce_axis[0])
    s[C].tensorize(ii, intrin)
    text = str(loom.lower(s, [A, B, C]))
    assert "gemm4x4" in text and intrin.name == "gemm4x4"


def test_element_wise_functions_and_constants():
    x = te.placeholder((8,), name="x")
    y = te.compute((8,), lambda i: te.if_then_else(x[i] > 0, te.exp(x[i]) * 2, te.maximum(x[i], -1.5)), name="y")
    f = loom.build(loom.create_schedule(y), [x, y])
    v = np.linspace(-3, 3, 8).astype(np.float32)
    np.testing.assert_allclose(f(v), np.where(v > 0, np.exp(v) * 2, np.maximum(v, -1.5)), rtol=1e-6)
    assert str(x[0] + 1) == "x(0) + 1.0f"  # the number takes the float32 operand's type
    # == builds an expression, as in TVM (not a Python bool)
    z = te.compute((8,), lambda i: te.if_then_else(i == 0, x[i] * 0, x[i]), name="z")
    g = loom.build(loom.create_schedule(z), [x, z])
    np.testing.assert_array_equal(g(v), np.where(np.arange(8) == 0, 0, v))
    assert isinstance(x[0] != 1, te.Expr)
    assert (x[0] * 2).dtype == "float32"


def test_stages_keep_their_schedule_alive():
    import gc
    A, B, C = gemm()
    stage = loom.create_schedule(C).stages[-1]  # the schedule itself is not kept by the caller
    gc.collect()
    outer, inner = stage.split(C.op.axis[0], factor=8)
    assert stage.name == "C" and [v.name for v in stage.leaf_iter_vars][:2] == [outer.name, inner.name]


def test_errors_name_what_is_wrong():
    s, args = scheduled_gemm()
    f = loom.build(s, args, name="gemm")
    a = np.zeros((N, K), np.float32)
    b = np.zeros((K, M), np.float32)
    with pytest.raises(loom.ShapeError, match=r"gemm: argument 1 'B' is \[48, 41\], expects float32\[48, 40\]"):
        f(a, np.zeros((K, M + 1), np.float32))
    with pytest.raises(loom.TypeError, match=r"gemm: argument 0 'A' is float64\[64, 48\], expects float32"):
        f(a.astype(np.float64), b)
    with pytest.raises(loom.TypeError, match=r"gemm: 1 arguments; it takes 3"):
        f(a)
    with pytest.raises(loom.TypeError, match=r"argument 0 'A' is a str, not an array"):
        f("A", b)
    with pytest.raises(loom.TypeError, match=r"argument 0 'A' is >f4\[64, 48\], expects float32"):
        f(a.astype(">f4"), b)  # big-endian: not the machine's byte order
    A, B, C = gemm()
    s = loom.create_schedule(C)
    with pytest.raises(loom.ScheduleError, match="give factor or nparts"):
        s[C].split(C.op.axis[0], factor=2, nparts=2)
    with pytest.raises(loom.TypeError, match="is not an iteration variable"):
        s[C].vectorize(3)
    with pytest.raises(loom.TypeError, match="has no truth value"):
        if A[0, 0] > 0:
            pass
    with pytest.raises(loom.ShapeError, match=r"A\[...\]: 1 indices for a tensor of rank 2"):
        te.compute((N,), lambda i: A[i], name="bad")
    with pytest.raises(loom.ConfigError, match="target 'tpu' is not one of llvm, accel, cuda"):
        loom.build(s, [A, B, C], target="tpu")
    with pytest.raises(loom.CodegenError, match="accelerator backend, function 'main': unsupported statement"):
        loom.build(s, [A, B, C], target="accel")  # a CPU schedule: host stores, no accelerator operations
    with pytest.raises(loom.TypeError, match="dtype 'float7'"):
        te.placeholder((2,), dtype="float7")
    with pytest.raises(loom.Error, match="C"):  # an output left out of the arguments
        loom.lower(s, [A, B])
