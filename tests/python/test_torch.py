"""loom.frontend.from_torch (torch.fx, no ONNX in between) against PyTorch's own outputs, on the
torchvision classifiers and transformer models the suite checks through ONNX
(scripts/export_test_models.py defines them); the ONNX path on the same modules beside it, so a
disagreement shows which path is wrong; the errors a caller gets; int8 through loom.compile on the
CPU and on the accelerator's simulator, bit for bit."""
import copy
import os
import sys

import numpy as np
import pytest
import torch
import torchvision.models as tvm

import loom
from loom.frontend import from_onnx, from_torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_test_models as etm  # noqa: E402  (the model definitions the ONNX tests use)

TOLERANCE = 1e-4  # of the largest magnitude of PyTorch's output


def seeded(make, x, calibrate=True, init=True):
    torch.manual_seed(0)
    m = make()
    if init:
        etm.init_weights(m)
    if calibrate:
        etm.calibrate_batchnorm(m, torch.randn(x.shape))
    return m.eval()


def reference(module, inputs):
    with torch.no_grad():
        out = module(*inputs)
    return [o.numpy() for o in (out if isinstance(out, (tuple, list)) else (out,))]


def assert_close(got, want, what, tolerance=TOLERANCE):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, what
        err = np.max(np.abs(g - w))
        assert err <= tolerance * np.max(np.abs(w)), f"{what}: error {err:.3g} of largest {np.max(np.abs(w)):.3g}"


def float32_noise(module, inputs, want):
    """How far PyTorch's own float32 output lies from the module's in float64, relative to the largest
    magnitude: a deep network with large activations (MobileNetV3's squeeze-excitation blocks under
    seeded weights) reaches 1e-4 by summation order alone, which differs between CPUs."""
    m64 = copy.deepcopy(module).double()
    cast = [i.double() if i.is_floating_point() else i for i in inputs]
    exact = reference(m64, cast)
    return max(float(np.max(np.abs(w - e)) / np.max(np.abs(e))) for w, e in zip(want, exact))


def image(n=1, size=64):
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(1))


def tokens(shape, vocab):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(2))


CLASSIFIERS = {
    "resnet18": (lambda: tvm.resnet18(weights=None), image(1, 64)),
    "resnet18_b2": (lambda: tvm.resnet18(weights=None), image(2, 32)),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None), image(1, 64)),
    "squeezenet": (lambda: tvm.squeezenet1_1(weights=None), image(1, 64)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(weights=None), image(1, 64)),
    "vgg_small": (etm.VggSmall, image(1, 32)),
    "mlp": (etm.mlp, torch.randn(4, 256, generator=torch.Generator().manual_seed(3))),
}

TRANSFORMERS = {
    "bert_tiny": (lambda: etm.TinyTransformer(), tokens((2, 16), 100)),
    "gpt_tiny": (lambda: etm.TinyTransformer(causal=True), tokens((1, 16), 100)),
    "vit_tiny": (lambda: etm.TinyViT(), image(1, 32)),
    "bert_encoder": (lambda: etm.BertEncoder(), torch.randn(1, 128, 256, generator=torch.Generator().manual_seed(4))),
}


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_torchvision_classifiers_match_pytorch(name):
    make, x = CLASSIFIERS[name]
    module = seeded(make, x, calibrate=name != "mlp")
    g = from_torch(module, (x,))
    assert [g.op(i) for i in g.inputs] == ["input"] and g.shape(g.inputs[0]) == tuple(x.shape)
    assert_close(loom.compile(g).run(x.numpy()), reference(module, (x,)), name)


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_transformers_match_pytorch(name):
    make, x = TRANSFORMERS[name]
    torch.manual_seed(0)
    module = make().eval()
    assert_close(loom.compile(from_torch(module, x)).run(x.numpy()), reference(module, (x,)), name)


CONV_TRANSPOSE = [dict(kernel_size=2, stride=2), dict(kernel_size=3, stride=2, padding=1, output_padding=1),
                  dict(kernel_size=3, padding=1), dict(kernel_size=4, stride=3, padding=2, groups=2, dilation=2),
                  dict(kernel_size=3, stride=2, bias=False)]


@pytest.mark.parametrize("options", CONV_TRANSPOSE, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_transposed_convolutions_match_pytorch(options):
    torch.manual_seed(0)
    layer = torch.nn.ConvTranspose2d(4, 6, **options).eval()  # a mapped layer given alone
    x = torch.randn(1, 4, 5, 7, generator=torch.Generator().manual_seed(6))
    assert_close(loom.compile(from_torch(layer, x)).run(x.numpy()), reference(layer, (x,)), str(options))


class NearestTwice(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest") + 1


class Interpolate(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return torch.nn.functional.interpolate(x, **self.options)


def test_nearest_upsampling_matches_pytorch():
    x = torch.randn(1, 3, 5, 7, generator=torch.Generator().manual_seed(7))
    for module in (NearestTwice().eval(), torch.nn.Upsample(scale_factor=(2, 3)).eval(),
                   Interpolate(size=(10, 14)).eval()):
        got = loom.compile(from_torch(module, x)).run(x.numpy())
        np.testing.assert_array_equal(got[0], reference(module, (x,))[0])  # copies: exact


INTERPOLATIONS = [  # (input shape, F.interpolate's options)
    ((1, 3, 7, 9), dict(scale_factor=2, mode="bilinear", align_corners=False)),
    ((1, 3, 7, 9), dict(size=(10, 5), mode="bilinear", align_corners=True)),
    ((1, 3, 7, 9), dict(size=(13, 4), mode="bilinear")),
    ((1, 3, 8, 8), dict(scale_factor=0.5, mode="bilinear", recompute_scale_factor=True)),
    ((1, 3, 7, 9), dict(scale_factor=1.7, mode="bicubic", align_corners=False)),
    ((1, 3, 7, 9), dict(size=(11, 6), mode="bicubic", align_corners=True)),
    ((1, 2, 5, 6), dict(size=(7, 11), mode="nearest")),
    ((1, 2, 14, 20), dict(size=(10, 14), mode="nearest")),
    ((1, 2, 5, 6), dict(scale_factor=1.5, mode="nearest-exact")),
    ((1, 2, 9), dict(scale_factor=2.5, mode="linear")),
    ((1, 2, 3, 4, 5), dict(size=(5, 6, 7), mode="trilinear")),
]


@pytest.mark.parametrize("shape,options", INTERPOLATIONS, ids=lambda v: str(v))
def test_interpolation_matches_pytorch(shape, options):
    """Linear, cubic and fractional nearest interpolation: nearest exactly (PyTorch's own index
    arithmetic), the others within 1e-5 of the largest output (weights in double, not float)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(11))
    module = Interpolate(**options).eval()
    got = loom.compile(from_torch(module, x)).run(x.numpy())[0]
    want = reference(module, (x,))[0]
    assert got.shape == want.shape
    if options["mode"].startswith("nearest"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_unmapped_interpolations_are_named():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(loom.ModelError, match=r"\(F.interpolate\): interpolation mode 'area' is not mapped"):
        from_torch(Interpolate(scale_factor=2, mode="area").eval(), x)
    with pytest.raises(loom.ModelError, match="antialiased interpolation is not mapped"):
        from_torch(Interpolate(scale_factor=2, mode="bilinear", antialias=True).eval(), x)


def test_graph_add_resize():
    """Graph.add_resize (the ONNX importer's Resize builder) by hand: cubic with aligned corners is
    PyTorch's bicubic; its errors."""
    g = loom.Graph("r")
    x = g.add_input("x", [1, 2, 4, 4])
    g.outputs = [g.add_resize(x, [1, 2, 7, 5], mode="cubic", coordinate_transformation_mode="align_corners")]
    data = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(np.float32)
    got = loom.compile(g).run(data)[0]
    want = torch.nn.functional.interpolate(torch.from_numpy(data), size=(7, 5), mode="bicubic", align_corners=True)
    np.testing.assert_allclose(got, want.numpy(), rtol=0, atol=1e-5)
    with pytest.raises(loom.ModelError, match="mode 'area' is not one of nearest, linear, cubic"):
        g.add_resize(x, [1, 2, 8, 8], mode="area")
    with pytest.raises(loom.ShapeError, match="3 sizes for a tensor of rank 4"):
        g.add_resize(x, [1, 8, 8])


def test_unet_matches_pytorch():
    x = image(1, 32)
    module = seeded(lambda: etm.TinyUNet(), x)  # transposed convolutions and skip concatenations
    assert_close(loom.compile(from_torch(module, x)).run(x.numpy()), reference(module, (x,)), "unet_tiny")


@pytest.mark.parametrize("name", ["mobilenet_v3_large", "bert_tiny"])
def test_onnx_path_beside_from_torch(name, tmp_path):
    """Both paths from one module: each against PyTorch, so where they disagree the failing one is wrong."""
    if name in CLASSIFIERS:
        make, x = CLASSIFIERS[name]
        module = seeded(make, x)
    else:
        make, x = TRANSFORMERS[name]
        torch.manual_seed(0)
        module = make().eval()
    want = reference(module, (x,))
    path = str(tmp_path / f"{name}.onnx")
    torch.onnx.export(module, (x,), path, opset_version=14, input_names=["input"], output_names=["output"])
    via_onnx = loom.compile(from_onnx(path)).run(x.numpy())
    via_fx = loom.compile(from_torch(module, (x,))).run(x.numpy())
    # Two float32 computations of one network differ by up to the sum of their rounding: within a
    # few times PyTorch's own distance from float64 (at least the usual tolerance).
    tolerance = max(TOLERANCE, 4 * float32_noise(module, (x,), want))
    assert_close(via_onnx, want, f"{name} through ONNX", tolerance)
    assert_close(via_fx, want, f"{name} through torch.fx", tolerance)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.shuffle = torch.nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.conv(x))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return torch.cumsum(self.block(x), 1)


class Head(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


class NetWithHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.head = Head()

    def forward(self, x):
        return self.head(self.conv(x))


def test_unsupported_calls_name_the_module_path_and_the_call():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(loom.ModelError, match=r"module 'block.shuffle', node 'block_shuffle' \(nn.PixelShuffle\)"):
        from_torch(Net().eval(), x)
    with pytest.raises(loom.ModelError, match=r"module 'head', node 'cumsum' \(torch.cumsum\): Loom has no mapping"):
        from_torch(NetWithHead().eval(), x)


class DataDependent(torch.nn.Module):
    def forward(self, x):
        return x - x.sum(dim=(1, 2, 3)).item()  # a number read from the data: one graph cannot hold it


class MaskFromInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=(x[0, :, :4].sum(-1, keepdim=True) > x[0, :, 0]), need_weights=False)[0]


def test_bad_calls_are_errors():
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(loom.ModelError, match="training mode"):
        from_torch(NetWithHead(), x)
    half = NetWithHead().eval()
    half.head.train()
    with pytest.raises(loom.ModelError, match=r"training mode \(head\)"):
        from_torch(half, x)
    with pytest.raises(loom.ModelError, match=r"node 'item' \(Tensor.item\): a value computed from the input's data"):
        from_torch(DataDependent().eval(), x)
    with pytest.raises(loom.ModelError, match="attn_mask computed from the inputs is not mapped"):
        from_torch(MaskFromInput().eval(), torch.randn(1, 5, 8))
    with pytest.raises(loom.ModelError, match="takes 1 inputs, example_inputs has 2"):
        from_torch(NetWithHead().eval(), (x, x))
    with pytest.raises(loom.TypeError, match=r"example_inputs\[0\] is a ndarray"):
        from_torch(NetWithHead().eval(), (x.numpy(),))
    with pytest.raises(loom.TypeError, match="not a torch.nn.Module"):
        from_torch(lambda t: t, x)
    pool = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(3)).eval()
    with pytest.raises(loom.ModelError, match=r"module '0'.*windows of different sizes"):
        from_torch(pool, torch.randn(1, 3, 8, 8))


def test_graph_by_hand_and_its_errors():
    g = loom.Graph("by_hand")
    x = g.add_input("x", [1, 2, 4, 4])
    w = g.add_constant("w", np.ones((3, 2, 1, 1), np.float32))
    y = g.add_op("conv2d", [x, w], {"strides": [1, 1]}, name="conv")
    z = g.add_op("relu", [y])
    g.outputs = [z]
    assert g.shape(z) == (1, 3, 4, 4) and g.dtype(z) == "float32" and g.node_name(y) == "conv"
    data = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4) - 16
    (got,) = loom.compile(g).run(data)
    np.testing.assert_allclose(got, np.maximum(np.repeat(data.sum(1, keepdims=True), 3, 1), 0))
    with pytest.raises(loom.ModelError, match=r"node 'conv_1' \(conv2d\).*'stride'"):
        g.add_op("conv2d", [x, w], {"stride": [1, 1]}, name="conv")
    with pytest.raises(loom.ModelError, match=r"node 'conv2d' \(conv2d\) with inputs float32\[1, 2, 4, 4\], "
                                              r"float32\[3, 2, 1, 1\]"):
        g.add_op("conv2d", [x, w], {"pads": [0, 0, 9, 9], "strides": [9, 9], "dilations": [0, 0]})
    with pytest.raises(loom.ModelError, match="nosuch"):
        g.add_op("nosuch", [x])
    with pytest.raises(loom.ModelError, match=r"1 inputs; conv2d takes 2 to 3"):
        g.add_op("conv2d", [x])
    with pytest.raises(loom.ModelError, match="node 99 does not exist"):
        g.add_op("relu", [99])
    with pytest.raises(loom.TypeError, match="attribute 'strides': a list of str"):
        g.add_op("conv2d", [x, w], {"strides": ["a"]})
    with pytest.raises(loom.TypeError, match="dtype 'complex64'"):
        g.add_input("c", [2], "complex64")
    assert "conv2d" in loom.operators() and "strides" in loom.operators()["conv2d"]["attrs"]


def test_int8_on_the_accelerator_equals_int8_on_the_cpu():
    """from_torch, quantized by loom.compile on inputs given from Python: the accelerator's layers
    on the functional simulator give the CPU's int8 results bit for bit."""
    x = image(1, 32)
    module = seeded(etm.VggSmall, x)
    g = from_torch(module, (x,))
    rng = np.random.default_rng(5)
    calibration = [rng.standard_normal(tuple(x.shape)).astype(np.float32) for _ in range(4)]
    cpu = loom.compile(g, quantize="int8", calibrate=calibration)
    accel = loom.compile(g, target="accel", quantize="int8", calibrate=calibration)
    assert cpu.quantization["calibration"]["inputs"] == 4
    (a,) = cpu.run(x.numpy())
    (b,) = accel.run(x.numpy())
    np.testing.assert_array_equal(a, b)
    profile = accel.profile(x.numpy())
    on_accel = [p for p in profile if p["device"] == "accel"]
    assert on_accel and all(p["gemm_macs"] > 0 and p["dma_bytes"] > 0 for p in on_accel)
    assert sum(p["seconds"] for p in profile) > 0 and len(profile) > len(on_accel)
    # The performance model counts cycles too, and computes the same values.
    perf = loom.compile(g, target="accel", quantize="int8", calibrate=calibration, backend="perf")
    timed = perf.profile(x.numpy())
    assert [p["kernel"] for p in timed] == [p["kernel"] for p in profile]
    assert all(p["cycles"] > 0 for p in timed if p["device"] == "accel")
    np.testing.assert_array_equal(perf.run(x.numpy())[0], a)
    np.testing.assert_array_equal(cpu.run(x)[0], a)  # a torch tensor, read through numpy
    with pytest.raises(loom.ShapeError, match=r"calibrate\[0\]: input 'x' is float32\[1, 3\]"):
        loom.compile(g, quantize="int8", calibrate=[np.zeros((1, 3), np.float32)])
    with pytest.raises(loom.ConfigError, match="quantize 'int4' is not one of"):
        loom.compile(g, quantize="int4")


class Recurrent(torch.nn.Module):
    """A recurrent layer, its output unpacked in Python (`y, h = ...`), and a linear head."""

    def __init__(self, cell, **options):
        super().__init__()
        self.rnn = cell(8, 16, **options)
        self.head = torch.nn.Linear(16 * (2 if options.get("bidirectional") else 1), 4)

    def forward(self, x):
        y, h = self.rnn(x)
        return (self.head(y),) + (tuple(h) if isinstance(h, tuple) else (h,))


class LstmWithState(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y[:, -1], h, c


RECURRENT = [
    (torch.nn.LSTM, {}),
    (torch.nn.LSTM, dict(num_layers=2, bidirectional=True)),
    (torch.nn.GRU, dict(batch_first=True)),
    (torch.nn.GRU, dict(num_layers=2, bidirectional=True, bias=False)),
    (torch.nn.RNN, dict(nonlinearity="relu", num_layers=2)),
    (torch.nn.RNN, dict(batch_first=True, bidirectional=True)),
]


@pytest.mark.parametrize("cell,options", RECURRENT, ids=lambda v: getattr(v, "__name__", str(v)))
def test_recurrent_layers_match_pytorch(cell, options):
    """LSTM, GRU and RNN layers (stacked, bidirectional, batch first, without biases): the output
    sequence and the last states within 1e-4 of PyTorch's largest output."""
    torch.manual_seed(0)
    module = Recurrent(cell, **options).eval()
    x = torch.randn(*((2, 5, 8) if options.get("batch_first") else (5, 2, 8)), generator=torch.Generator().manual_seed(3))
    assert_close(loom.compile(from_torch(module, x)).run(x.numpy()), reference(module, (x,)), f"{cell.__name__} {options}")


def test_lstm_with_initial_state_and_through_onnx(tmp_path):
    """Initial states as model inputs; the same LSTM through ONNX and through torch.fx, each against
    PyTorch; projections refused by name."""
    torch.manual_seed(0)
    module = LstmWithState().eval()
    g = torch.Generator().manual_seed(4)
    inputs = (torch.randn(3, 6, 8, generator=g), torch.randn(2, 3, 16, generator=g), torch.randn(2, 3, 16, generator=g))
    want = reference(module, inputs)
    assert_close(loom.compile(from_torch(module, inputs)).run(*[t.numpy() for t in inputs]), want, "torch.fx")
    path = str(tmp_path / "lstm.onnx")
    torch.onnx.export(module, inputs, path, opset_version=14, input_names=["x", "h0", "c0"])
    assert_close(loom.compile(from_onnx(path)).run(*[t.numpy() for t in inputs]), want, "ONNX")
    with pytest.raises(loom.ModelError, match=r"\(nn.LSTM\): an LSTM with projections \(proj_size\) is not mapped"):
        from_torch(torch.nn.LSTM(4, 8, proj_size=2).eval(), torch.randn(3, 1, 4))


def test_graph_add_recurrent_errors():
    g = loom.Graph("r")
    x = g.add_input("x", [5, 2, 8])
    w = g.add_constant("w", np.zeros((1, 64, 8), np.float32))
    r = g.add_constant("r", np.zeros((1, 64, 16), np.float32))
    with pytest.raises(loom.ModelError, match="cell 'lstmx' is not one of rnn, gru, lstm"):
        g.add_recurrent("lstmx", x, w, r, hidden=16)
    with pytest.raises(loom.ModelError, match=r"W is float32\[1, 64, 8\], expected float32\[1, 48, 8\]"):
        g.add_recurrent("gru", x, w, r, hidden=16)
    with pytest.raises(loom.ModelError, match="activation 'gelu' is not one of sigmoid, tanh, relu"):
        g.add_recurrent("lstm", x, w, r, hidden=16, activations=["sigmoid", "gelu", "tanh"])
    y, y_h, y_c = g.add_recurrent("lstm", x, w, r, hidden=16)
    assert g.shape(y) == (5, 1, 2, 16) and g.shape(y_h) == g.shape(y_c) == (1, 2, 16)
