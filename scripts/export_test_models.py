#!/usr/bin/env python3
"""Export Loom's ONNX test models together with PyTorch reference outputs.

Usage (Debian's python, needs torch 1.13, torchvision 0.14, onnx 1.12, numpy):

    /usr/bin/python3 scripts/export_test_models.py OUTDIR [--only NAME,...] [--list]
                     [--with-large] [--no-verify] [--op-table]

For each case NAME it writes, into OUTDIR:
    NAME.onnx                      the model (static shapes, no external data)
    NAME.input<K>.npy              graph input K (ONNX graph-input order)
    NAME.output<K>.npy             PyTorch's output K (ONNX graph-output order)
and one OUTDIR/manifest.json describing every case present in OUTDIR (see docs/models.md).

References always come from PyTorch (the torch module that was exported, or, for graphs built
with onnx.helper, an equivalent torch.nn.functional expression). Every model is additionally
checked with onnx.checker (opset-18 ones excepted, see Case.check) and evaluated by a small
float64 numpy interpreter written from the ONNX operator spec (below, `OnnxNumpyEvaluator`),
which must agree with the PyTorch reference; this catches exports whose ONNX semantics differ
from what torch computed. onnxruntime is not used. Everything is seeded per case (crc32 of the
name), so the output is deterministic and independent of which cases are selected or in what
order they run.
"""

import argparse
import io
import json
import math
import os
import sys
import time
import warnings
import zlib
from collections import OrderedDict

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_OPSET = 13
# Max error of the numpy ONNX evaluation vs the torch reference, normalised by max(1, max|ref|).
VERIFY_TOL = 2e-4


# --------------------------------------------------------------------------------------------
# Case registry
# --------------------------------------------------------------------------------------------

class Case:
    def __init__(self, name, build, source, opset, default=True, verify=True, check=True):
        self.name = name
        self.build = build          # build(case, rng) -> (onnx_bytes, [inputs], [outputs])
        self.source = source        # "torch" | "onnx.helper"
        self.opset = opset
        self.default = default
        # Whether the numpy ONNX evaluator below covers the model's operators (the network
        # families of today's models use operators it does not implement; PyTorch is their reference).
        self.verify = verify
        # Whether onnx.checker validates the model: False only for opset-18 models, which onnx
        # 1.12's checker refuses ("Bad node spec": it knows opsets up to 17) though Loom reads them.
        self.check = check


CASES = OrderedDict()


def register(name, build, source, opset=DEFAULT_OPSET, default=True, verify=True, check=True):
    assert name not in CASES, name
    CASES[name] = Case(name, build, source, opset, default, verify, check)


def case_seed(name):
    return zlib.crc32(name.encode("utf-8"))


# --------------------------------------------------------------------------------------------
# Helpers: weights, inputs, export
# --------------------------------------------------------------------------------------------

@torch.no_grad()
def init_weights(model):
    """Kaiming-like weights (activations stay O(1)) and non-trivial BatchNorm statistics."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
            m.weight.normal_(0.0, math.sqrt(2.0 / fan_in))
            if m.bias is not None:
                m.bias.uniform_(-0.1, 0.1)
        elif isinstance(m, nn.Linear):
            m.weight.normal_(0.0, math.sqrt(2.0 / m.in_features))
            if m.bias is not None:
                m.bias.uniform_(-0.1, 0.1)
        elif isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0.0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0.0, 0.1)
    return model


@torch.no_grad()
def calibrate_batchnorm(model, x):
    """Networks: set each BatchNorm's running stats from the statistics its input really has
    on a random calibration batch, perturbed (mean + N(0, 0.1) * std, var * U[0.5, 1.5]), so
    that BN stays non-trivial (folding is really tested) while activations stay O(1) through
    deep residual stacks (plain N(0, 0.1) / U[0.5, 1.5] stats let ResNet logits reach ~450)."""
    def pre_hook(m, inp):
        t = inp[0]
        mean = t.mean(dim=(0, 2, 3))
        var = t.var(dim=(0, 2, 3), unbiased=False).clamp_min(1e-3)
        m.running_mean.copy_(mean + torch.randn_like(mean) * 0.1 * var.sqrt())
        m.running_var.copy_(var * torch.empty_like(var).uniform_(0.5, 1.5))
    hooks = [m.register_forward_pre_hook(pre_hook) for m in model.modules()
             if isinstance(m, nn.BatchNorm2d)]
    model.eval()
    model(x)
    for h in hooks:
        h.remove()


def randn(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def imagenet_normalized(shape):
    """Images in [0, 1] normalized with ImageNet's channel means and deviations, as torchvision's
    classifiers read them (values about -2.1 to 2.6)."""
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    return lambda rng: ((rng.random(shape).astype(np.float32) - mean) / std).astype(np.float32)


def away_from_zero(rng, shape, lo=0.5, hi=2.0):
    mag = rng.uniform(lo, hi, size=shape)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (mag * sign).astype(np.float32)


def torch_reference(fn, inputs):
    with torch.no_grad():
        out = fn(*[torch.from_numpy(x) for x in inputs])
    if isinstance(out, torch.Tensor):
        out = [out]
    return [o.detach().contiguous().numpy().astype(np.float32, copy=True) for o in out]


def torch_export(model, inputs, opset):
    model.eval()
    n_out = None
    with torch.no_grad():
        outputs = torch_reference(model, inputs)
    n_out = len(outputs)
    input_names = ["input"] if len(inputs) == 1 else ["input%d" % i for i in range(len(inputs))]
    output_names = ["output"] if n_out == 1 else ["output%d" % i for i in range(n_out)]
    buf = io.BytesIO()
    args = tuple(torch.from_numpy(x) for x in inputs)
    torch.onnx.export(model, args, buf, export_params=True, opset_version=opset,
                      do_constant_folding=True, input_names=input_names,
                      output_names=output_names, training=torch.onnx.TrainingMode.EVAL,
                      keep_initializers_as_inputs=False)
    return buf.getvalue(), outputs


def make_torch_case(name, make_module, input_makers, opset=DEFAULT_OPSET, default=True,
                    init=True, calibrate=False, verify=True):
    """make_module() -> nn.Module; input_makers: list of rng -> np.ndarray."""
    def build(case, rng):
        inputs = [mk(rng) for mk in input_makers]
        model = make_module()
        if init:
            init_weights(model)
        if calibrate:
            calibrate_batchnorm(model, torch.randn(inputs[0].shape))
        model.eval()
        data, outputs = torch_export(model, inputs, opset)
        return data, inputs, outputs
    register(name, build, "torch", opset, default, verify)


class Fn(nn.Module):
    """Wraps a lambda as a module (parameter-free ops)."""
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def shaped(shape, scale=1.0):
    return lambda rng: randn(rng, shape, scale)


def make_helper_model(nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(nodes, "loom_test", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="loom export_test_models.py")
    model.ir_version = 7
    return model.SerializeToString()


def vi(name, arr_or_shape):
    shape = arr_or_shape.shape if hasattr(arr_or_shape, "shape") else arr_or_shape
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


# --------------------------------------------------------------------------------------------
# Networks
# --------------------------------------------------------------------------------------------

def tv_models():
    import torchvision.models as tvm
    return tvm


class Interpolate(nn.Module):
    """F.interpolate to a fixed size, bilinear, align_corners=False (torchvision's segmentation heads)."""
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x):
        return F.interpolate(x, size=self.size, mode="bilinear", align_corners=False)


def squeeze_excitation(channels, squeezed):
    import torchvision.ops
    return torchvision.ops.SqueezeExcitation(channels, squeezed)


class VggSmall(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        layers, c = [], 3
        for v in [16, "M", 32, "M", 64, 64, "M"]:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1, bias=False), nn.BatchNorm2d(v),
                           nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(64 * 4 * 4, 64), nn.ReLU(inplace=True),
                                        nn.Dropout(0.5), nn.Linear(64, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def mlp():
    return nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def register_networks():
    make_torch_case("resnet18", lambda: tv_models().resnet18(weights=None),
                    [shaped((1, 3, 224, 224))], calibrate=True)
    make_torch_case("resnet18_b2", lambda: tv_models().resnet18(weights=None),
                    [shaped((2, 3, 224, 224))], calibrate=True)
    make_torch_case("mobilenet_v2", lambda: tv_models().mobilenet_v2(weights=None),
                    [shaped((1, 3, 224, 224))], calibrate=True)
    make_torch_case("squeezenet", lambda: tv_models().squeezenet1_1(weights=None),
                    [shaped((1, 3, 224, 224))], calibrate=True)
    make_torch_case("vgg_small", VggSmall, [shaped((1, 3, 32, 32))], calibrate=True)
    make_torch_case("vgg_small_opset11", VggSmall, [shaped((1, 3, 32, 32))], opset=11,
                    calibrate=True)
    make_torch_case("mlp", mlp, [shaped((4, 256))])
    make_torch_case("mlp_opset17", mlp, [shaped((4, 256))], opset=17)
    # A new user's first model (README's bring-your-own-model path): images normalized as for
    # ImageNet, hard-swish, squeeze-excitation.
    make_torch_case("mobilenet_v3_large", lambda: tv_models().mobilenet_v3_large(weights=None),
                    [imagenet_normalized((1, 3, 224, 224))], calibrate=True, verify=False)
    make_torch_case("resnet50", lambda: tv_models().resnet50(weights=None),
                    [shaped((1, 3, 224, 224))], default=False, calibrate=True)


# Today's network families, small: a BERT-style encoder and a GPT-style decoder (token and position
# embeddings, attention, GELU, LayerNorm), a vision transformer, an LSTM classifier and a UNet
# (transposed convolutions, skip concatenations). Weights are torch's own initialization.

class TinyTransformer(nn.Module):
    def __init__(self, vocab=100, seq=16, d=32, heads=4, layers=2, classes=5, causal=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=causal)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes if not causal else vocab)
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1) if causal else None
        self.register_buffer("mask", mask)

    def forward(self, ids):
        x = self.enc(self.tok(ids) + self.pos, mask=self.mask)
        x = self.norm(x)
        return self.head(x) if self.mask is not None else self.head(x.mean(dim=1))


class TinyViT(nn.Module):
    def __init__(self, image=32, patch=8, d=32, heads=4, layers=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, d) * 0.1)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, classes))

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.enc(x)[:, 0])


class LstmClassifier(nn.Module):
    def __init__(self, vocab=50, d=16, hidden=24, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, ids):
        out, _ = self.lstm(self.emb(ids))
        return self.head(out[:, -1])


class TinyUNet(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
        self.d1, self.d2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.u2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.b2 = block(4 * c, 2 * c)
        self.u1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.b1 = block(2 * c, c)
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        s1 = self.d1(x)
        s2 = self.d2(F.max_pool2d(s1, 2))
        m = self.mid(F.max_pool2d(s2, 2))
        y = self.b2(torch.cat([self.u2(m), s2], 1))
        y = self.b1(torch.cat([self.u1(y), s1], 1))
        return self.out(y)


class BertEncoder(nn.Module):
    """BERT-base's structure at a small size: post-norm encoder layers (attention, GELU feed-forward,
    LayerNorm) over embeddings given as the input; the hidden states are the output."""
    def __init__(self, d=256, heads=4, layers=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        for name, p in self.enc.named_parameters():  # each layer its own weights (the copies start equal)
            if "norm" in name:
                continue
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            else:
                nn.init.normal_(p, std=0.02)

    def forward(self, x):
        return self.enc(x)


def token_ids(shape, vocab):
    return lambda rng: rng.integers(0, vocab, size=shape, dtype=np.int64)


def register_families():
    make_torch_case("bert_tiny", lambda: TinyTransformer(), [token_ids((2, 16), 100)], opset=14, init=False,
                    verify=False)
    make_torch_case("gpt_tiny", lambda: TinyTransformer(causal=True), [token_ids((1, 16), 100)], opset=14,
                    init=False, verify=False)
    make_torch_case("vit_tiny", lambda: TinyViT(), [shaped((1, 3, 32, 32))], opset=14, init=False, verify=False)
    make_torch_case("lstm_classifier", lambda: LstmClassifier(), [token_ids((2, 12), 50)], opset=14, init=False,
                    verify=False)
    make_torch_case("bert_encoder", lambda: BertEncoder(), [shaped((1, 128, 256))], opset=14, init=False,
                    verify=False)
    make_torch_case("unet_tiny", lambda: TinyUNet(), [shaped((1, 3, 32, 32))], opset=14, calibrate=True,
                    verify=False)


# --------------------------------------------------------------------------------------------
# Single-operator cases
# --------------------------------------------------------------------------------------------

class ConvBnReluAdd(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + x)


class ConstMatMul(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.randn(k, n) / math.sqrt(k))

    def forward(self, x):
        return torch.matmul(x, self.w)


def build_conv_asym_pad(case, rng):
    x = randn(rng, (1, 4, 9, 11))
    w = randn(rng, (6, 4, 3, 3), math.sqrt(2.0 / 36))
    b = rng.uniform(-0.1, 0.1, size=(6,)).astype(np.float32)
    pads = [0, 1, 2, 1]  # [top, left, bottom, right]
    node = helper.make_node("Conv", ["input", "W", "B"], ["output"], kernel_shape=[3, 3],
                            pads=pads, strides=[1, 1])
    ref = torch_reference(
        lambda t: F.conv2d(F.pad(t, (pads[1], pads[3], pads[0], pads[2])), torch.from_numpy(w),
                           torch.from_numpy(b)), [x])
    data = make_helper_model([node], [vi("input", x)], [vi("output", ref[0])],
                             [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
                             case.opset)
    return data, [x], ref


def build_conv_autopad_same_upper(case, rng):
    x = randn(rng, (1, 4, 10, 13))
    w = randn(rng, (5, 4, 3, 3), math.sqrt(2.0 / 36))
    b = rng.uniform(-0.1, 0.1, size=(5,)).astype(np.float32)
    stride, k = 2, 3
    node = helper.make_node("Conv", ["input", "W", "B"], ["output"], kernel_shape=[k, k],
                            strides=[stride, stride], auto_pad="SAME_UPPER")
    # SAME_UPPER: out = ceil(in / stride); total pad split with the odd element at the end.
    pad = []
    for size in x.shape[2:]:
        out = -(-size // stride)
        total = max((out - 1) * stride + k - size, 0)
        pad.append((total // 2, total - total // 2))
    (pt, pb), (pl, pr) = pad
    ref = torch_reference(
        lambda t: F.conv2d(F.pad(t, (pl, pr, pt, pb)), torch.from_numpy(w), torch.from_numpy(b),
                           stride=stride), [x])
    data = make_helper_model([node], [vi("input", x)], [vi("output", ref[0])],
                             [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
                             case.opset)
    return data, [x], ref


def build_gemm_transa(case, rng):
    M, K, N = 5, 6, 7
    a = randn(rng, (K, M))               # transA=1: A is stored [K, M]
    bm = randn(rng, (K, N), 1.0 / math.sqrt(K))
    c = randn(rng, (N,), 0.5)
    node = helper.make_node("Gemm", ["input", "B", "C"], ["output"], alpha=0.5, beta=2.0,
                            transA=1, transB=0)
    ref = torch_reference(lambda t: 0.5 * (t.t() @ torch.from_numpy(bm)) + 2.0 * torch.from_numpy(c),
                          [a])
    data = make_helper_model([node], [vi("input", a)], [vi("output", ref[0])],
                             [numpy_helper.from_array(bm, "B"), numpy_helper.from_array(c, "C")],
                             case.opset)
    return data, [a], ref


class BnSmallVar(nn.Module):
    """BatchNorm with a large epsilon (1e-3, as Keras/TF exports have) over small running
    variances, where epsilon decides the scale: dropping or misreading it changes the output by
    a third. Alone, it becomes a multiply and add (build_conv_bn_eps: folded into a conv)."""
    def __init__(self, c=6):
        super().__init__()
        self.bn = nn.BatchNorm2d(c, eps=1e-3)
        with torch.no_grad():
            self.bn.running_var.uniform_(2e-4, 2e-3)
            self.bn.running_mean.normal_(0.0, 0.05)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.bn(x)


class OutputAlsoRead(nn.Module):
    """A value that is a graph output and also the input of element-wise ops (which fusion must
    not swallow), a diamond, and a residual chain."""
    def __init__(self, c=6):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = self.conv(x)           # an output read by three ops
        z = F.relu(y + 1.0)        # an output read by one element-wise op
        e = torch.exp(-z)
        d = torch.sigmoid(y) * torch.tanh(y) + e
        r = d
        for _ in range(4):
            r = F.relu(self.conv2(r) + r)
        return y, z, r


def build_conv_bn_eps(case, rng):
    """Conv then BatchNormalization (epsilon 1e-3, small variances) as separate nodes: Loom folds
    the BatchNorm into the conv's weights (torch's export would have folded it already)."""
    x = randn(rng, (1, 4, 7, 8))
    w = randn(rng, (6, 4, 3, 3), math.sqrt(2.0 / 36))
    gamma = rng.uniform(0.5, 1.5, size=(6,)).astype(np.float32)
    beta = randn(rng, (6,), 0.1)
    mean = randn(rng, (6,), 0.05)
    var = rng.uniform(2e-4, 2e-3, size=(6,)).astype(np.float32)
    conv = helper.make_node("Conv", ["input", "W"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    bn = helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["output"], epsilon=1e-3)
    t = [torch.from_numpy(a) for a in (w, mean, var, gamma, beta)]
    ref = torch_reference(lambda v: F.batch_norm(F.conv2d(v, t[0], padding=1), t[1], t[2], t[3], t[4], eps=1e-3), [x])
    inits = [numpy_helper.from_array(a, n) for a, n in ((w, "W"), (gamma, "gamma"), (beta, "beta"), (mean, "mean"), (var, "var"))]
    data = make_helper_model([conv, bn], [vi("input", x)], [vi("output", ref[0])], inits, case.opset)
    return data, [x], ref


def build_avgpool_asym(case, rng, include_pad):
    """AveragePool with unequal leading/trailing pads ([top, left, bottom, right] = [0, 1, 2, 1])."""
    x = randn(rng, (1, 3, 9, 10))
    k, s = 3, 2
    pads = [0, 1, 2, 1]
    node = helper.make_node("AveragePool", ["input"], ["output"], kernel_shape=[k, k], strides=[s, s],
                            pads=pads, count_include_pad=int(include_pad))

    def ref_fn(t):
        padded = F.pad(t, (pads[1], pads[3], pads[0], pads[2]))
        total = F.avg_pool2d(padded, k, s) * (k * k)
        # the divisor: every window position (include) or the real elements only (exclude)
        ones = F.pad(torch.ones_like(t), (pads[1], pads[3], pads[0], pads[2]), value=1.0 if include_pad else 0.0)
        count = F.avg_pool2d(ones, k, s) * (k * k)
        return total / count
    ref = torch_reference(ref_fn, [x])
    data = make_helper_model([node], [vi("input", x)], [vi("output", ref[0])], [], case.opset)
    return data, [x], ref


def build_conv_autopad(case, rng, mode):
    x = randn(rng, (1, 3, 9, 12))
    w = randn(rng, (4, 3, 3, 3), math.sqrt(2.0 / 27))
    stride = 2
    node = helper.make_node("Conv", ["input", "W"], ["output"], kernel_shape=[3, 3],
                            strides=[stride, stride], auto_pad=mode)
    pads = _spatial_pads({"auto_pad": mode}, x.shape[2:], (3, 3), (stride, stride), (1, 1))
    (pt, pb), (pl, pr) = pads
    ref = torch_reference(lambda t: F.conv2d(F.pad(t, (pl, pr, pt, pb)), torch.from_numpy(w), stride=stride), [x])
    data = make_helper_model([node], [vi("input", x)], [vi("output", ref[0])],
                             [numpy_helper.from_array(w, "W")], case.opset)
    return data, [x], ref


def build_leaky_relu_default(case, rng):
    """LeakyRelu without its alpha attribute: the spec's default 0.01."""
    x = randn(rng, (2, 3, 4, 5))
    node = helper.make_node("LeakyRelu", ["input"], ["output"])
    ref = torch_reference(lambda t: F.leaky_relu(t, 0.01), [x])
    data = make_helper_model([node], [vi("input", x)], [vi("output", ref[0])], [], case.opset)
    return data, [x], ref


def build_unused_input(case, rng):
    """A graph input no node reads (its value must not matter)."""
    x, unused = randn(rng, (2, 5)), randn(rng, (3,))
    node = helper.make_node("Relu", ["input0"], ["output"])
    ref = torch_reference(lambda t, u: F.relu(t), [x, unused])
    data = make_helper_model([node], [vi("input0", x), vi("input1", unused)], [vi("output", ref[0])], [], case.opset)
    return data, [x, unused], ref


def register_ops():
    T = make_torch_case
    # conv
    T("conv_groups", lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2), [shaped((1, 4, 9, 11))])
    T("conv_depthwise", lambda: nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8),
      [shaped((1, 8, 13, 13))])
    T("conv_dilation", lambda: nn.Conv2d(4, 6, 3, dilation=2, padding=1), [shaped((1, 4, 11, 11))])
    # Atrous convolutions whose outer taps read the map only near its edges: Loom cuts the output
    # into regions of one live tap set each (prune_conv_taps); DeepLabV3's dilation 12 over 14x14,
    # and a strided one over a non-square map.
    # A squeeze-and-excitation block (EfficientNet, MobileNetV3): computed channel scales times
    # a map Loom keeps channel-blocked.
    T("squeeze_excitation", lambda: nn.Sequential(nn.Conv2d(8, 32, 3, padding=1), nn.ReLU(),
                                                  squeeze_excitation(32, 8), nn.Conv2d(32, 16, 1)),
      [shaped((1, 8, 12, 12))])
    # Bilinear upsampling as in segmentation heads: two gathered passes, the first stored.
    # (The numpy evaluator checks nearest resizes only: PyTorch is the reference here.)
    T("resize_bilinear", lambda: Interpolate((56, 48)), [shaped((1, 21, 7, 6))], verify=False)
    T("conv_atrous_regions", lambda: nn.Conv2d(64, 64, 3, dilation=12, padding=12), [shaped((1, 64, 14, 14))])
    T("conv_atrous_regions_strided", lambda: nn.Conv2d(96, 128, 3, stride=2, dilation=8, padding=8),
      [shaped((1, 96, 20, 16))])
    T("conv_stride_pad", lambda: nn.Conv2d(4, 6, 3, stride=2, padding=(1, 2)),
      [shaped((1, 4, 11, 12))])
    register("conv_asym_pad", build_conv_asym_pad, "onnx.helper")
    register("conv_autopad_same_upper", build_conv_autopad_same_upper, "onnx.helper")
    T("conv_bias_relu", lambda: nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()),
      [shaped((1, 3, 10, 10))])
    T("conv_bn_relu_add", ConvBnReluAdd, [shaped((1, 8, 9, 9))])
    # dense
    T("gemm_linear", lambda: nn.Linear(16, 10), [shaped((3, 16))])
    register("gemm_transa_transb_alpha_beta", build_gemm_transa, "onnx.helper")
    T("matmul_broadcast", lambda: ConstMatMul(7, 4), [shaped((2, 3, 5, 7))], init=False)
    T("matmul_batch", lambda: Fn(torch.matmul), [shaped((2, 3, 5, 7)), shaped((3, 7, 4))])
    # normalisation / activations
    T("batchnorm", lambda: nn.BatchNorm2d(6), [shaped((1, 6, 7, 9))])
    T("relu", nn.ReLU, [shaped((1, 4, 7, 9))])
    T("clip", lambda: Fn(lambda x: torch.clamp(x, min=-0.5, max=0.7)), [shaped((1, 4, 7, 9))])
    T("relu6", nn.ReLU6, [shaped((1, 4, 7, 9), 4.0)])
    T("leaky_relu", lambda: nn.LeakyReLU(0.1), [shaped((1, 4, 7, 9))])
    T("sigmoid", nn.Sigmoid, [shaped((1, 4, 7, 9), 2.0)])
    T("tanh", nn.Tanh, [shaped((1, 4, 7, 9), 2.0)])
    T("softmax_axis1", lambda: nn.Softmax(dim=1), [shaped((2, 5, 3, 4), 2.0)])
    T("softmax_last", lambda: nn.Softmax(dim=-1), [shaped((3, 10), 2.0)])
    bshapes = [shaped((2, 3, 4, 5)), shaped((3, 1, 5))]
    T("add_broadcast", lambda: Fn(torch.add), bshapes)
    T("sub_broadcast", lambda: Fn(torch.sub), bshapes)
    T("mul_broadcast", lambda: Fn(torch.mul), bshapes)
    T("div_broadcast", lambda: Fn(torch.div),
      [shaped((2, 3, 4, 5)), lambda rng: away_from_zero(rng, (3, 1, 5))])
    # pools
    T("maxpool_pads", lambda: nn.MaxPool2d(3, stride=2, padding=1), [shaped((1, 4, 11, 11))])
    T("maxpool_ceil", lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True), [shaped((1, 4, 12, 12))])
    T("avgpool_include_pad", lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=True),
      [shaped((1, 4, 11, 12))])
    T("avgpool_exclude_pad", lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
      [shaped((1, 4, 11, 12))])
    T("global_avgpool", lambda: nn.AdaptiveAvgPool2d(1), [shaped((1, 8, 7, 9))])
    # Average pools of 1x1 convs, which Loom runs pool first (pool_before_pointwise_conv): a
    # DenseNet transition, and a biased conv under a pool with partial windows.
    T("densenet_transition", lambda: nn.Sequential(nn.BatchNorm2d(64), nn.ReLU(), nn.Conv2d(64, 32, 1, bias=False),
                                                   nn.AvgPool2d(2, stride=2)), [shaped((1, 64, 14, 14))])
    T("pool_after_pointwise_ceil", lambda: nn.Sequential(nn.Conv2d(24, 40, 1), nn.AvgPool2d(3, stride=2, ceil_mode=True)),
      [shaped((1, 24, 13, 13))])
    # shape ops
    T("flatten", lambda: Fn(lambda x: torch.flatten(x, 1)), [shaped((2, 3, 4, 5))])
    T("reshape", lambda: Fn(lambda x: x.reshape(2, 12, 5)), [shaped((2, 3, 4, 5))])
    T("transpose", lambda: Fn(lambda x: x.permute(0, 2, 3, 1)), [shaped((1, 3, 5, 7))])
    T("concat", lambda: Fn(lambda a, b: torch.cat([a, b], dim=1)),
      [shaped((1, 3, 5, 6)), shaped((1, 5, 5, 6))])
    T("squeeze_unsqueeze", lambda: Fn(lambda x: x.squeeze(1).unsqueeze(0)), [shaped((2, 1, 5, 3))])
    T("pad_constant", lambda: Fn(lambda x: F.pad(x, (1, 2, 0, 3), mode="constant", value=0.5)),
      [shaped((1, 3, 5, 7))])
    T("pad_reflect", lambda: Fn(lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect")),
      [shaped((1, 3, 5, 7))])
    T("pad_edge", lambda: Fn(lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate")),
      [shaped((1, 3, 5, 7))])
    T("resize_nearest", lambda: Fn(lambda x: F.interpolate(x, scale_factor=2, mode="nearest")),
      [shaped((1, 3, 5, 7))])
    T("identity_dropout", lambda: nn.Sequential(nn.Dropout(0.5), nn.Identity()),
      [shaped((1, 4, 5, 6))])
    # Attribute values PyTorch's defaults never produce (docs/testing.md, "the parameter sweep")
    T("batchnorm_eps_small_var", BnSmallVar, [shaped((1, 6, 5, 7), 0.05)], init=False)
    register("conv_bn_eps_small_var", build_conv_bn_eps, "onnx.helper")
    register("avgpool_asym_pads_include", lambda c, r: build_avgpool_asym(c, r, True), "onnx.helper")
    register("avgpool_asym_pads_exclude", lambda c, r: build_avgpool_asym(c, r, False), "onnx.helper")
    register("conv_autopad_same_lower", lambda c, r: build_conv_autopad(c, r, "SAME_LOWER"), "onnx.helper")
    register("conv_autopad_valid", lambda c, r: build_conv_autopad(c, r, "VALID"), "onnx.helper")
    register("leaky_relu_default_alpha", build_leaky_relu_default, "onnx.helper")
    register("unused_input", build_unused_input, "onnx.helper")
    T("concat_negative_axis", lambda: Fn(lambda a, b: torch.cat([a, b], dim=-1)),
      [shaped((1, 3, 5, 2)), shaped((1, 3, 5, 4))])
    T("maxpool_asym_ceil_dilation", lambda: nn.MaxPool2d(3, stride=2, padding=1, dilation=2, ceil_mode=True),
      [shaped((1, 3, 12, 13))])
    T("avgpool_ceil_include_pad", lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
      [shaped((1, 3, 10, 11))])
    # Graph shapes: outputs that other ops read, a diamond, a residual chain
    T("output_also_read", OutputAlsoRead, [shaped((1, 6, 7, 8))])


register_networks()
register_families()
register_ops()
# Importer modes (recurrent cells, Resize, reductions) against spec-derived and PyTorch references.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_mode_cases  # noqa: E402
onnx_mode_cases.register_all(register, helper_module=sys.modules[__name__])


# --------------------------------------------------------------------------------------------
# Independent check: a small float64 numpy interpreter of the ONNX operators used above
# --------------------------------------------------------------------------------------------

def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _windows(x, kernel, strides, dilations, out_hw):
    """x: padded [N,C,H,W] -> view [N,C,OH,OW,kh,kw]."""
    kh, kw = kernel
    dh, dw = dilations
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    win = np.lib.stride_tricks.sliding_window_view(x, (ekh, ekw), axis=(2, 3))
    win = win[:, :, ::strides[0], ::strides[1], ::dh, ::dw]
    return win[:, :, :out_hw[0], :out_hw[1]]


def _spatial_pads(attrs, in_hw, kernel, strides, dilations):
    auto_pad = _s(attrs.get("auto_pad", "NOTSET"))
    if auto_pad in ("NOTSET", ""):
        p = list(attrs.get("pads", [0, 0, 0, 0]))
        return [(p[0], p[2]), (p[1], p[3])]
    if auto_pad == "VALID":
        return [(0, 0), (0, 0)]
    res = []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        res.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return res


def _out_size(size, pads, k, s, d, ceil_mode=False):
    eff = (k - 1) * d + 1
    num = size + pads[0] + pads[1] - eff
    return (-(-num // s) if ceil_mode else num // s) + 1


def np_conv(x, w, b, attrs):
    assert x.ndim == 4, "only 2-D conv"
    N, C, H, W = x.shape
    M, Cg, kh, kw = w.shape
    G = attrs.get("group", 1)
    assert C == Cg * G
    strides = attrs.get("strides", [1, 1])
    dil = attrs.get("dilations", [1, 1])
    pads = _spatial_pads(attrs, (H, W), (kh, kw), strides, dil)
    OH = _out_size(H, pads[0], kh, strides[0], dil[0])
    OW = _out_size(W, pads[1], kw, strides[1], dil[1])
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    win = _windows(xp, (kh, kw), strides, dil, (OH, OW))            # N,C,OH,OW,kh,kw
    cols = win.reshape(N, G, Cg, OH, OW, kh, kw).transpose(0, 1, 3, 4, 2, 5, 6)
    cols = cols.reshape(N, G, OH * OW, Cg * kh * kw)
    wm = w.reshape(G, M // G, Cg * kh * kw).transpose(0, 2, 1)
    y = np.matmul(cols, wm[None])                                    # N,G,OH*OW,M/G
    y = y.transpose(0, 1, 3, 2).reshape(N, M, OH, OW)
    if b is not None:
        y = y + b.reshape(1, M, 1, 1)
    return y


def np_pool(x, attrs, kind):
    N, C, H, W = x.shape
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides", [1, 1])
    dil = attrs.get("dilations", [1, 1])
    ceil_mode = attrs.get("ceil_mode", 0)
    pads = _spatial_pads(attrs, (H, W), kernel, strides, dil)
    outs = []
    for axis, size in enumerate((H, W)):
        o = _out_size(size, pads[axis], kernel[axis], strides[axis], dil[axis], ceil_mode)
        # a window must start inside the input or its begin padding (torch/ONNX convention)
        if ceil_mode and (o - 1) * strides[axis] >= size + pads[axis][0]:
            o -= 1
        outs.append(o)
    OH, OW = outs
    # extra end padding so that every (ceil-mode) window is in range; it never counts.
    extra = [max((outs[a] - 1) * strides[a] + (kernel[a] - 1) * dil[a] + 1
                 - ((H, W)[a] + pads[a][0] + pads[a][1]), 0) for a in range(2)]
    padw = ((0, 0), (0, 0), (pads[0][0], pads[0][1] + extra[0]), (pads[1][0], pads[1][1] + extra[1]))
    if kind == "max":
        xp = np.pad(x, padw, constant_values=-np.inf)
        y = _windows(xp, kernel, strides, dil, (OH, OW)).max(axis=(4, 5))
        assert np.all(np.isfinite(y)), "max pool window entirely in padding"
        return y
    xp = np.pad(x, padw)
    s = _windows(xp, kernel, strides, dil, (OH, OW)).sum(axis=(4, 5))
    # divisor: count real elements (exclude) or real + explicit pads (include), never the extra
    mask = np.zeros((1, 1) + xp.shape[2:])
    if attrs.get("count_include_pad", 0):
        mask[..., :H + pads[0][0] + pads[0][1], :W + pads[1][0] + pads[1][1]] = 1
    else:
        mask[..., pads[0][0]:pads[0][0] + H, pads[1][0]:pads[1][0] + W] = 1
    cnt = _windows(mask, kernel, strides, dil, (OH, OW)).sum(axis=(4, 5))
    return s / cnt


def np_resize(x, roi, scales, sizes, attrs):
    mode = _s(attrs.get("mode", "nearest"))
    assert mode == "nearest", "only nearest resize is implemented"
    ctm = _s(attrs.get("coordinate_transformation_mode", "half_pixel"))
    nm = _s(attrs.get("nearest_mode", "round_prefer_floor"))
    if sizes is not None and sizes.size:
        out_shape = [int(v) for v in sizes]
        scales = np.array(out_shape, dtype=np.float64) / np.array(x.shape)
    else:
        out_shape = [int(math.floor(d * s)) for d, s in zip(x.shape, scales)]
    y = x
    for axis, (n_in, n_out, sc) in enumerate(zip(x.shape, out_shape, scales)):
        o = np.arange(n_out, dtype=np.float64)
        if ctm == "asymmetric":
            c = o / sc
        elif ctm == "half_pixel":
            c = (o + 0.5) / sc - 0.5
        elif ctm == "pytorch_half_pixel":
            c = (o + 0.5) / sc - 0.5 if n_out > 1 else np.zeros_like(o)
        elif ctm == "align_corners":
            c = o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(o)
        elif ctm == "tf_half_pixel_for_nn":
            c = (o + 0.5) / sc
        else:
            raise NotImplementedError(ctm)
        if nm == "floor":
            idx = np.floor(c)
        elif nm == "ceil":
            idx = np.ceil(c)
        elif nm == "round_prefer_floor":
            idx = np.where(c - np.floor(c) == 0.5, np.floor(c), np.round(c))
        else:
            idx = np.where(c - np.floor(c) == 0.5, np.ceil(c), np.round(c))
        idx = np.clip(idx, 0, n_in - 1).astype(np.int64)
        y = np.take(y, idx, axis=axis)
    return y


def np_pad(x, pads, value, mode):
    n = x.ndim
    pads = [int(p) for p in pads]
    begin, end = pads[:n], pads[n:]
    # negative pads crop
    sl = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begin, end)))
    x = x[sl]
    pw = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if mode == "constant":
        return np.pad(x, pw, mode="constant", constant_values=value)
    if mode == "reflect":
        return np.pad(x, pw, mode="reflect")
    if mode == "edge":
        return np.pad(x, pw, mode="edge")
    raise NotImplementedError(mode)


class OnnxNumpyEvaluator:
    def __init__(self, model):
        self.model = model
        self.opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

    def run(self, inputs):
        g = self.model.graph
        env = {}
        for t in g.initializer:
            env[t.name] = self._cvt(numpy_helper.to_array(t))
        init_names = {t.name for t in g.initializer}
        real_inputs = [i for i in g.input if i.name not in init_names]
        assert len(real_inputs) == len(inputs)
        for vi_, x in zip(real_inputs, inputs):
            env[vi_.name] = x.astype(np.float64)
        env[""] = None
        for node in g.node:
            ins = [env[n] if n else None for n in node.input]
            outs = self.eval_node(node, ins)
            for name, val in zip(node.output, outs):
                env[name] = val
        return [env[o.name] for o in g.output]

    @staticmethod
    def _cvt(a):
        return a.astype(np.float64) if a.dtype in (np.float32, np.float16) else a

    def eval_node(self, node, ins):
        op, a = node.op_type, _attrs(node)
        x = ins[0] if ins else None
        if op == "Conv":
            return [np_conv(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
        if op == "BatchNormalization":
            sc, b, mean, var = ins[1:5]
            eps = a.get("epsilon", 1e-5)
            sh = (1, -1) + (1,) * (x.ndim - 2)
            return [(x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * sc.reshape(sh)
                    + b.reshape(sh)]
        if op == "Gemm":
            A = x.T if a.get("transA", 0) else x
            B = ins[1].T if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
            return [y]
        if op == "MatMul":
            return [np.matmul(x, ins[1])]
        if op == "Relu":
            return [np.maximum(x, 0)]
        if op == "Clip":
            if self.opset >= 11:
                lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
                hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
            else:
                lo, hi = a.get("min", -np.inf), a.get("max", np.inf)
            return [np.minimum(np.maximum(x, lo), hi)]
        if op == "LeakyRelu":
            return [np.where(x >= 0, x, a.get("alpha", 0.01) * x)]
        if op == "Sigmoid":
            return [1.0 / (1.0 + np.exp(-x))]
        if op == "Tanh":
            return [np.tanh(x)]
        if op == "Neg":
            return [-x]
        if op == "Exp":
            return [np.exp(x)]
        if op == "Softmax":
            axis = a.get("axis", -1 if self.opset >= 13 else 1)
            if self.opset >= 13:
                e = np.exp(x - x.max(axis=axis, keepdims=True))
                return [e / e.sum(axis=axis, keepdims=True)]
            axis = axis % x.ndim
            x2 = x.reshape(int(np.prod(x.shape[:axis])), -1)
            e = np.exp(x2 - x2.max(axis=1, keepdims=True))
            return [(e / e.sum(axis=1, keepdims=True)).reshape(x.shape)]
        if op in ("Add", "Sub", "Mul", "Div"):
            f = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
            if x.dtype.kind == "i" and op == "Div":
                return [x // ins[1]]
            return [f(x, ins[1])]
        if op == "MaxPool":
            return [np_pool(x, a, "max")]
        if op == "AveragePool":
            return [np_pool(x, a, "avg")]
        if op == "GlobalAveragePool":
            return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
        if op == "Flatten":
            axis = a.get("axis", 1) % (x.ndim + 1) if x.ndim else 0
            return [x.reshape(int(np.prod(x.shape[:axis])), -1)]
        if op == "Reshape":
            shape = [int(v) for v in ins[1]]
            if not a.get("allowzero", 0):
                shape = [x.shape[i] if v == 0 else v for i, v in enumerate(shape)]
            return [x.reshape(shape)]
        if op == "Transpose":
            return [x.transpose(a.get("perm", list(range(x.ndim))[::-1]))]
        if op == "Concat":
            return [np.concatenate(ins, axis=a["axis"])]
        if op in ("Squeeze", "Unsqueeze"):
            axes = a.get("axes")
            if self.opset >= 13:
                axes = [int(v) for v in ins[1]] if len(ins) > 1 and ins[1] is not None else None
            if op == "Squeeze":
                return [np.squeeze(x, axis=tuple(axes) if axes is not None else None)]
            rank = x.ndim + len(axes)
            y = x
            for ax in sorted(v % rank for v in axes):
                y = np.expand_dims(y, ax)
            return [y]
        if op == "Pad":
            mode = _s(a.get("mode", "constant"))
            if self.opset >= 11:
                pads = ins[1]
                value = ins[2] if len(ins) > 2 and ins[2] is not None else 0.0
            else:
                pads, value = a["pads"], a.get("value", 0.0)
            return [np_pad(x, pads, float(np.asarray(value).reshape(-1)[0]) if np.size(value) else 0.0,
                           mode)]
        if op == "Resize":
            if self.opset >= 11:
                roi = ins[1] if len(ins) > 1 else None
                scales = ins[2] if len(ins) > 2 and ins[2] is not None and ins[2].size else None
                sizes = ins[3] if len(ins) > 3 else None
            else:
                roi, scales, sizes = None, ins[1], None
            return [np_resize(x, roi, scales, sizes, a)]
        if op in ("Identity", "Dropout"):
            return [x] + ([np.ones(x.shape, dtype=bool)] if op == "Dropout" else [])
        if op == "Constant":
            if "value" in a:
                return [self._cvt(numpy_helper.to_array(a["value"]))]
            for k in ("value_float", "value_floats"):
                if k in a:
                    return [np.array(a[k], dtype=np.float64)]
            for k in ("value_int", "value_ints"):
                if k in a:
                    return [np.array(a[k], dtype=np.int64)]
            raise NotImplementedError("Constant attribute")
        if op == "Slice":
            if self.opset >= 10:
                starts, ends = ins[1], ins[2]
                axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
                steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            else:
                starts, ends = a["starts"], a["ends"]
                axes, steps = a.get("axes", range(len(starts))), [1] * len(starts)
            sl = [slice(None)] * x.ndim
            for st, en, ax, sp in zip(starts, ends, axes, steps):
                n = x.shape[int(ax)]
                st, en, sp = int(st), int(en), int(sp)
                st = st + n if st < 0 else st
                en = en + n if en < 0 else en
                if sp > 0:
                    st, en = min(max(st, 0), n), min(max(en, 0), n)
                else:
                    st, en = min(max(st, 0), n - 1), min(max(en, -1), n - 1)
                sl[int(ax)] = slice(st, en if en >= 0 else None, sp)
            return [x[tuple(sl)]]
        if op == "Shape":
            return [np.array(x.shape, dtype=np.int64)]
        if op == "Gather":
            return [np.take(x, ins[1].astype(np.int64), axis=a.get("axis", 0))]
        if op == "Cast":
            to = helper.tensor_dtype_to_np_dtype(a["to"]) if hasattr(helper, "tensor_dtype_to_np_dtype") \
                else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]]
            return [self._cvt(x.astype(to))]
        if op == "ConstantOfShape":
            v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
            return [self._cvt(np.full([int(s) for s in x], v.reshape(-1)[0], dtype=v.dtype))]
        raise NotImplementedError("numpy evaluator has no implementation of ONNX op " + op)


# --------------------------------------------------------------------------------------------
# Output: atomic writes, manifest
# --------------------------------------------------------------------------------------------

def atomic_write_bytes(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def atomic_save_npy(path, arr):
    arr = np.ascontiguousarray(arr)
    if arr.dtype.kind == "f":
        arr = arr.astype("<f4")
    elif arr.dtype.kind in "iu":
        arr = arr.astype("<i8")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=(1, 0), allow_pickle=False)
    atomic_write_bytes(path, buf.getvalue())


def dtype_name(arr):
    return {"f": "float32", "i": "int64", "u": "int64", "b": "bool"}[arr.dtype.kind]


def graph_op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def tensor_entries(outdir, name, kind, arrays=None):
    """Entries for NAME.<kind>K.npy; from arrays if given, otherwise read from disk."""
    entries, k = [], 0
    while True:
        fname = "%s.%s%d.npy" % (name, kind, k)
        if arrays is not None:
            if k >= len(arrays):
                break
            arr = arrays[k]
        else:
            p = os.path.join(outdir, fname)
            if not os.path.exists(p):
                break
            arr = np.load(p, mmap_mode="r")
        entries.append({"file": fname, "shape": [int(d) for d in arr.shape],
                        "dtype": dtype_name(arr)})
        k += 1
    return entries


def remove_stale(outdir, name, kind, count):
    k = count
    while os.path.exists(os.path.join(outdir, "%s.%s%d.npy" % (name, kind, k))):
        os.remove(os.path.join(outdir, "%s.%s%d.npy" % (name, kind, k)))
        k += 1


def manifest_entry(case, model, inputs, outputs, outdir):
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return {"name": case.name,
            "inputs": tensor_entries(outdir, case.name, "input", inputs),
            "outputs": tensor_entries(outdir, case.name, "output", outputs),
            "opset": int(opset), "source": case.source,
            "default": case.default,
            "op_types": graph_op_types(model)}


def write_manifest(outdir, fresh):
    """Manifest for every known case whose files are in OUTDIR (fresh entries win)."""
    cases = []
    for name, case in CASES.items():
        if name in fresh:
            cases.append(fresh[name])
            continue
        path = os.path.join(outdir, name + ".onnx")
        if not os.path.exists(path):
            continue
        model = onnx.load(path)
        entry = manifest_entry(case, model, None, None, outdir)
        if entry["inputs"] and entry["outputs"]:
            cases.append(entry)
    text = json.dumps({"cases": cases}, indent=1) + "\n"
    atomic_write_bytes(os.path.join(outdir, "manifest.json"), text.encode())
    return cases


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def check_io(model, inputs, outputs):
    g = model.graph
    init = {t.name for t in g.initializer}
    real_inputs = [i for i in g.input if i.name not in init]
    assert len(real_inputs) == len(inputs), "graph inputs %d vs %d arrays" % (len(real_inputs), len(inputs))
    assert len(g.output) == len(outputs), "graph outputs %d vs %d arrays" % (len(g.output), len(outputs))
    for v, arr in list(zip(real_inputs, inputs)) + list(zip(g.output, outputs)):
        # torch leaves a symbolic dim_param where its shape inference gave up (e.g. Pad)
        dims = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
        assert len(dims) == arr.ndim and all(d is None or d == n for d, n in zip(dims, arr.shape)), \
            "%s: graph shape %s vs array %s" % (v.name, dims, arr.shape)


def run_case(case, outdir, verify):
    t0 = time.time()
    torch.manual_seed(case_seed(case.name))
    rng = np.random.default_rng(case_seed(case.name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data, inputs, outputs = case.build(case, rng)
    notes = sorted({str(w.message).split(" (Triggered")[0] for w in caught})
    model = onnx.load_from_string(data)
    if case.check:   # see Case.check
        onnx.checker.check_model(model)
    check_io(model, inputs, outputs)
    for arr in outputs:
        assert np.all(np.isfinite(arr)), case.name + ": non-finite reference"
    err = None
    if verify and case.verify:
        got = OnnxNumpyEvaluator(model).run(inputs)
        err = 0.0
        for g_, ref in zip(got, outputs):
            assert g_.shape == ref.shape, "%s: numpy eval shape %s vs torch %s" % (case.name, g_.shape, ref.shape)
            scale = max(1.0, float(np.abs(ref).max()))
            err = max(err, float(np.abs(g_ - ref.astype(np.float64)).max()) / scale)
        if err > VERIFY_TOL:
            raise AssertionError("%s: ONNX numpy evaluation differs from torch reference: %.3g"
                                 % (case.name, err))
    atomic_write_bytes(os.path.join(outdir, case.name + ".onnx"), data)
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for k, arr in enumerate(arrays):
            atomic_save_npy(os.path.join(outdir, "%s.%s%d.npy" % (case.name, kind, k)), arr)
        remove_stale(outdir, case.name, kind, len(arrays))
    entry = manifest_entry(case, model, inputs, outputs, outdir)
    amax = max(float(np.abs(o).max()) for o in outputs)
    print("  %-32s opset %2d  %6.2fs  %8.1f KiB  max|out| %8.3g  eval err %s  ops: %s"
          % (case.name, entry["opset"], time.time() - t0, len(data) / 1024.0, amax,
             "%.1e" % err if err is not None else "-", ",".join(entry["op_types"])), flush=True)
    for note in notes:
        print("      torch warning: " + note[:200], flush=True)
    return entry


def dir_size(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if os.path.isfile(os.path.join(path, f)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="output directory (created if missing)")
    ap.add_argument("--only", help="comma-separated case names (any case, including large ones)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--with-large", action="store_true", help="also export resnet50")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the numpy ONNX evaluation cross-check")
    ap.add_argument("--op-table", action="store_true",
                    help="after exporting, print op_type -> cases for all cases in the manifest")
    args = ap.parse_args(argv)

    selected = [c for c in CASES.values() if c.default or args.with_large]
    if args.list:
        for c in selected:
            print(c.name)
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required")
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in CASES]
        if unknown:
            ap.error("unknown case(s): %s (see --list)" % ", ".join(unknown))
        selected = [CASES[n] for n in CASES if n in names]

    torch.set_num_threads(2)
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.time()
    fresh = {}
    print("exporting %d case(s) into %s" % (len(selected), args.outdir), flush=True)
    for case in selected:
        fresh[case.name] = run_case(case, args.outdir, not args.no_verify)
    cases = write_manifest(args.outdir, fresh)
    elapsed = time.time() - t0
    if args.op_table:
        table = OrderedDict()
        for c in cases:
            for op in c["op_types"]:
                table.setdefault(op, []).append(c["name"])
        print("\nop_type -> cases")
        for op in sorted(table):
            print("  %-20s %s" % (op, ", ".join(table[op])))
    print("done: %d case(s) exported, manifest lists %d, %.1f s, OUTDIR %.1f MiB"
          % (len(selected), len(cases), elapsed, dir_size(args.outdir) / 2**20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
