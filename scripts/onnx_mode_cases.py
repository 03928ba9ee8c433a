"""ONNX importer modes that the network and single-operator cases of export_test_models.py never
reach, each against a reference that does not come from Loom.

export_test_models.py calls register_all() after its own registrations. Each family is one ONNX
model (built with onnx.helper) whose nodes read the same graph inputs; every variant is its own
node with its own graph outputs, named after the variant (`gru_lbr1_bidirectional_Y`,
`nearest__half_pixel__round_prefer_ceil__sizes`), so that test_model_case's "output K" is the
K-th name of `onnx.load(CASE.onnx).graph.output`.

  rnn_modes_gru, rnn_modes_lstm, rnn_modes_rnn (opset 14): GRU (linear_before_reset 0 and 1), LSTM
    (peepholes) and RNN: forward, reverse, bidirectional; layout 0 and 1; activations other than
    the defaults; initial_h / initial_c; bias B absent; sequence_lens a constant with shorter
    sequences. Outputs Y, Y_h (and Y_c).
  rnn_torch_export (opset 14): torch.nn.GRU, LSTM and RNN(relu) as torch.onnx.export writes them
    (bidirectional, batch_first, initial states as graph inputs).
  resize_modes_nearest, resize_modes_linear_cubic, resize_modes_crop (opset 13), resize_modes_opset11:
    Resize, mode nearest x coordinate_transformation_mode x nearest_mode, linear and cubic x
    coordinate modes x cubic_coeff_a x exclude_outside, tf_crop_and_resize with roi and
    extrapolation_value, scales and sizes, a 4-D input resized up and down by non-integer factors
    in one node (H 5 -> 8 or 6 -> 9, W 8 -> 5); opset 11 for tf_half_pixel_for_nn and its
    required roi / empty scales.
  reduce_modes_opset13 (Sum, Mean, Max, Min, Prod), reduce_modes_opset13_l1_l2_log (L1, L2, LogSum,
    LogSumExp, SumSquare), reduce_sum_opset12: axes as an attribute (ReduceSum's an input from
    opset 13, an attribute in 12), keepdims 0/1, negative axes, all axes, empty axes with
    noop_with_empty_axes 0/1.
  reduce_modes_opset18 (Mean, Max, Min, Prod), reduce_modes_opset18_l1_l2_log (L1, L2, LogSum,
    LogSumExp, SumSquare): the opset-18 form, axes an input (given, empty, absent) with
    noop_with_empty_axes absent / 0 / 1.
  window_modes (opset 13): MaxPool / AveragePool auto_pad=VALID (strided, dilated), Conv without
    kernel_shape (2-D with pads, grouped SAME_UPPER, 1-D SAME_LOWER).
  conv_transpose_modes (opset 13): ConvTranspose auto_pad SAME_LOWER / SAME_UPPER on odd total
    paddings (with dilations, groups, output_padding) and VALID.
  quant_conv_modes (opset 13): ConvInteger (zero points absent, per tensor, per output channel;
    uint8 and int8) and QLinearConv (int32 bias, per-channel w_scale), with kernel_shape, pads,
    strides, dilations, group and every auto_pad value.
  quant_linear_modes (opset 13): QuantizeLinear / DequantizeLinear with axis 0, negative, inner,
    without zero point, DequantizeLinear of int32; MatMulInteger without one or both zero points.
  norm_modes (opset 17): LayerNormalization without B, with stash_type and epsilon (Y, Mean,
    InvStdDev); MeanVarianceNormalization with axes.
  attr_defaults_opset17: TopK without axis and with sorted=0 (K=1), GatherElements without axis,
    ScatterElements reduction=mul, Celu / Shrink defaults, Dropout-13 without seed, Constant's
    value_float(s) / value_int(s), ConstantOfShape without value, Squeeze without axes,
    Hann/Hamming/BlackmanWindow with output_datatype (float, double).
  shape_modes_opset11: Squeeze / Unsqueeze axes and Split split as attributes.
  opset18_modes: Split-18 num_outputs (even, uneven) or the split input, Pad-18 without axes,
    ScatterElements / ScatterND reduction max and min, Resize-18 without its new attributes.
  upsample_linear_opset9: Upsample mode=linear.
The opset-18 cases are not checked with onnx.checker (onnx 1.12 knows opsets up to 17).
Integer inputs are float graph inputs holding whole numbers, cast in the graph (the test inputs
are float32 or int64 files); integer outputs keep their ONNX type.

References. Every variant has a float64 numpy reference written from the ONNX 1.12 operator
documentation (onnx.defs.get_schema(op).doc and the attribute texts), not from Loom's importer.
Where PyTorch computes exactly the same function, PyTorch's output is the stored reference and
the numpy one must agree with it (checked whenever the case is exported, so a wrong numpy reference
cannot pass silently):
  GRU linear_before_reset=1, LSTM without peepholes and RNN tanh/relu, with default activations:
    torch.nn.GRU / LSTM / RNN (bidirectional modules give the reverse direction; packed sequences
    give sequence_lens: zeros past a sequence's end, Y_h its last valid step, the reverse
    direction starting at the sequence's last valid step).
  Resize nearest asymmetric+floor (F.interpolate 'nearest'), half_pixel+round_prefer_ceil
    ('nearest-exact'), linear half_pixel/pytorch_half_pixel (bilinear, align_corners=False) and
    align_corners (align_corners=True), cubic with a = -0.75 and exclude_outside=0 likewise
    (bicubic). Everything else (linear asymmetric, a = -0.5, exclude_outside=1, tf_crop_and_resize,
    tf_half_pixel_for_nn, output length 1) is numpy only.
  Reductions: torch.sum/mean/amax/amin/prod/abs-sum/vector_norm/logsumexp.
  Pools: F.max_pool2d / avg_pool2d, AveragePool/MaxPool VALID cross-checked by onnx's own backend
    pool (onnx/backend/test/case/node/pool_op_common.py). Conv: F.conv1d/2d of the input padded
    as the auto_pad text says, cross-checked by export_test_models.py's numpy Conv. ConvTranspose:
    F.conv_transpose2d cropped by the pads of the spec's total_padding split, against a numpy
    scatter-add from the spec. ConvInteger / QLinearConv / MatMulInteger: the same convolutions
    (torch.matmul) of the operands less their zero points, exact in float64; requantization in
    numpy (values within 1e-6 of a rounding tie are refused, float32 could round them either way).
  LayerNormalization: F.layer_norm; MeanVarianceNormalization: torch mean / biased var; TopK,
    GatherElements, Celu, Shrink (bias = lambd: softshrink), Squeeze, Split, Pad: torch;
    ScatterElements mul / max / min: scatter_reduce; ScatterND max / min: index_reduce; window
    functions: torch.hann/hamming(alpha 25/46, beta 21/46)/blackman_window. Quantize /
    DequantizeLinear, Constant, Upsample (cross-checked by onnx's backend-test interpolate_nd):
    numpy only.
While this module was written, the numpy Resize, GRU (linear_before_reset 0 and 1) and LSTM
(peephole) references also matched onnx 1.12's own backend-test implementations
(onnx/backend/test/case/node/{resize,gru,lstm}.py) to 1e-14.

Left out:
  - what Loom refuses (its importer says so): activation_alpha/beta, activations other
    than Sigmoid/Tanh/Relu, LSTM input_forget=1, reductions to rank 0 (keepdims=0 over all axes).
  - where the spec reads two ways: tf_half_pixel_for_nn with ceil / round_prefer_ceil on axes
    that are not resized (see build_resize_opset11), tf_crop_and_resize with scales and a roi
    not 1 wide (the output length), align_corners / half_pixel with scales whose in * scale is
    not whole (the spec's scale is length_resized / length_original; onnx's reference and Loom
    use the given scale and, for align_corners, the unrounded in * scale).
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

import torch
import torch.nn as nn
import torch.nn.functional as F

# numpy reference vs PyTorch, relative to max(1, max|ref|): both are exact up to float32 rounding.
AGREE_TOL = 2e-5


def _check_agree(name, ours, torchs, tol=AGREE_TOL):
    assert ours.shape == torchs.shape, "%s: numpy reference %s vs torch %s" % (name, ours.shape, torchs.shape)
    scale = max(1.0, float(np.abs(torchs).max()))
    err = float(np.abs(ours - torchs.astype(np.float64)).max()) / scale
    assert err <= tol, "%s: numpy reference differs from PyTorch by %.3g" % (name, err)


class _Graph:
    """Collects one model's nodes, graph inputs (with their arrays), initializers and outputs
    (with their references)."""

    def __init__(self):
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.in_arrays, self.refs = [], []
        self.names = set()

    def input(self, name, arr):
        if name not in self.names:
            self.names.add(name)
            self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(arr.shape)))
            self.in_arrays.append(arr)
        return name

    def const(self, name, arr):
        if name not in self.names:
            self.names.add(name)
            self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def cast_input(self, name, arr, to):
        """A float graph input holding whole numbers (the test inputs are float32 or int64 files),
        cast to the integer type `to` (TensorProto.UINT8, INT8, INT32) in the graph."""
        out = "%s_%s" % (name, TensorProto.DataType.Name(to).lower())
        if out not in self.names:
            self.names.add(out)
            self.nodes.append(helper.make_node("Cast", [self.input(name, arr.astype(np.float32))], [out], to=to))
        return out

    def output(self, name, ref, elem=TensorProto.FLOAT):
        """A graph output of ONNX type `elem` (float outputs are stored float32, integer ones as
        they are)."""
        ref = np.ascontiguousarray(ref, dtype=np.float32 if elem in (TensorProto.FLOAT, TensorProto.DOUBLE) else None)
        assert np.all(np.isfinite(ref)), name
        # test_model_case divides the error by the output's largest magnitude: never all zeros
        assert np.abs(ref).max() > 1e-3, name + ": reference (nearly) all zero"
        self.outputs.append(helper.make_tensor_value_info(name, elem, list(ref.shape)))
        self.refs.append(ref)
        return name

    def build(self, H, opset):
        data = H.make_helper_model(self.nodes, self.inputs, self.outputs, self.inits, opset)
        if opset >= 15:   # make_helper_model writes IR version 7 (opsets up to 14); 8 goes with 15-18
            model = onnx.load_from_string(data)
            model.ir_version = 8
            data = model.SerializeToString()
        return data, self.in_arrays, self.refs


# --------------------------------------------------------------------------------------------
# Recurrent cells (GRU, LSTM, RNN; opset 14)
# --------------------------------------------------------------------------------------------

ACTS = {"Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "Tanh": np.tanh, "Relu": lambda x: np.maximum(x, 0.0)}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
SEQ, BATCH, IN, HID = 5, 3, 4, 6
SEQ_LENS = np.array([5, 2, 4], np.int32)   # int32: the type the spec gives sequence_lens


def np_recurrent(cell, x, w, r, b, h0, c0, p, lens, direction, acts, lbr, clip=None):
    """One ONNX RNN/GRU/LSTM node in layout 0, float64, from the operator's equations.
    x [S,N,I], w [D,G*H,I], r [D,G*H,H], b [D,2*G*H], h0/c0 [D,N,H], p [D,3*H] (None: zeros).
    sequence_lens: steps past a sequence's length are not run (Y is 0 there) and the reverse
    direction starts at the sequence's last valid step. Returns Y [S,D,N,H], Y_h, Y_c [D,N,H]."""
    S, N, _ = x.shape
    D, GH, _ = w.shape
    H = GH // GATES[cell]
    per = len(DEFAULT_ACTS[cell])
    b = np.zeros((D, 2 * GH)) if b is None else b
    h0 = np.zeros((D, N, H)) if h0 is None else h0
    c0 = np.zeros((D, N, H)) if c0 is None else c0
    p = np.zeros((D, 3 * H)) if p is None else p
    lens = [S] * N if lens is None else [int(v) for v in lens]
    Y, Yh, Yc = np.zeros((S, D, N, H)), np.zeros((D, N, H)), np.zeros((D, N, H))
    for d in range(D):
        backward = direction == "reverse" or d == 1
        fns = [ACTS[a] for a in acts[d * per:(d + 1) * per]]
        if clip is not None:   # "clipping ... is applied to the input of activations"
            fns = [(lambda f: lambda v: f(np.clip(v, -clip, clip)))(f) for f in fns]
        W, R, Wb, Rb = w[d], r[d], b[d, :GH], b[d, GH:]
        for n in range(N):
            h, c = h0[d, n], c0[d, n]
            steps = range(lens[n] - 1, -1, -1) if backward else range(lens[n])
            for t in steps:
                xt = x[t, n]
                if cell == "RNN":
                    h = fns[0](W @ xt + R @ h + Wb + Rb)
                elif cell == "GRU":
                    f, g = fns
                    sl = [slice(k * H, (k + 1) * H) for k in range(3)]   # z, r, h
                    z = f(W[sl[0]] @ xt + R[sl[0]] @ h + Wb[sl[0]] + Rb[sl[0]])
                    rr = f(W[sl[1]] @ xt + R[sl[1]] @ h + Wb[sl[1]] + Rb[sl[1]])
                    if lbr:
                        hh = g(W[sl[2]] @ xt + rr * (R[sl[2]] @ h + Rb[sl[2]]) + Wb[sl[2]])
                    else:
                        hh = g(W[sl[2]] @ xt + R[sl[2]] @ (rr * h) + Rb[sl[2]] + Wb[sl[2]])
                    h = (1.0 - z) * hh + z * h
                else:
                    f, g, hf = fns
                    pre = W @ xt + R @ h + Wb + Rb
                    gi, go, gf, gc = (pre[k * H:(k + 1) * H] for k in range(4))   # i, o, f, c
                    pi, po, pf = (p[d, k * H:(k + 1) * H] for k in range(3))       # P[iof]
                    i = f(gi + pi * c)
                    fg = f(gf + pf * c)
                    c = fg * c + i * g(gc)
                    o = f(go + po * c)
                    h = o * hf(c)
                Y[t, d, n] = h
            Yh[d, n], Yc[d, n] = h, c
    return Y, Yh, Yc


# ONNX gate order -> torch's: GRU z,r,h -> r,z,n; LSTM i,o,f,c -> i,f,g,o.
TORCH_PERM = {"RNN": [0], "GRU": [1, 0, 2], "LSTM": [0, 2, 3, 1]}


@torch.no_grad()
def torch_recurrent(cell, x, w, r, b, h0, c0, lens, direction, acts):
    """The same node with torch.nn.GRU/LSTM/RNN (always a bidirectional module: its backward half
    is ONNX's reverse direction). Layout 0 arrays; returns float32 Y, Y_h, Y_c."""
    S, N, I = x.shape
    D, GH, _ = w.shape
    G = GATES[cell]
    H = GH // G
    kw = {"nonlinearity": acts[0].lower()} if cell == "RNN" else {}
    mod = {"RNN": nn.RNN, "GRU": nn.GRU, "LSTM": nn.LSTM}[cell](I, H, bidirectional=True, **kw).double()
    b = np.zeros((D, 2 * GH)) if b is None else b
    slots = [1] if direction == "reverse" else list(range(D))
    full_h, full_c = np.zeros((2, N, H)), np.zeros((2, N, H))
    perm = TORCH_PERM[cell]

    def reorder(a):
        return np.concatenate([a[k * H:(k + 1) * H] for k in perm], axis=0)
    for d, slot in enumerate(slots):
        sfx = "_l0_reverse" if slot == 1 else "_l0"
        getattr(mod, "weight_ih" + sfx).copy_(torch.from_numpy(reorder(w[d])))
        getattr(mod, "weight_hh" + sfx).copy_(torch.from_numpy(reorder(r[d])))
        getattr(mod, "bias_ih" + sfx).copy_(torch.from_numpy(reorder(b[d, :GH])))
        getattr(mod, "bias_hh" + sfx).copy_(torch.from_numpy(reorder(b[d, GH:])))
        if h0 is not None:
            full_h[slot] = h0[d]
        if c0 is not None:
            full_c[slot] = c0[d]
    xt = torch.from_numpy(x.astype(np.float64))
    state = torch.from_numpy(full_h)
    if cell == "LSTM":
        state = (state, torch.from_numpy(full_c))
    if lens is not None:
        xt = nn.utils.rnn.pack_padded_sequence(xt, torch.tensor(lens, dtype=torch.int64), enforce_sorted=False)
    y, hn = mod(xt, state)
    if lens is not None:
        y, _ = nn.utils.rnn.pad_packed_sequence(y, total_length=S)
    hn, cn = (hn if cell == "LSTM" else (hn, None))
    y = y.reshape(S, N, 2, H).permute(0, 2, 1, 3)[:, slots]
    outs = [y, hn[slots]] + ([cn[slots]] if cell == "LSTM" else [])
    return [o.numpy() for o in outs]


# Each variant: (name, attributes/inputs). Keys: dir, layout, lbr, bias, init, lens, acts, peep, clip,
# no_hidden_size.
GRU_VARIANTS = [
    ("gru_lbr1_clip_bidirectional", dict(lbr=1, clip=0.5, dir="bidirectional")),
    ("gru_lbr0_clip_seqlens", dict(lbr=0, clip=0.3, lens=True)),
    ("gru_lbr1_no_hidden_size", dict(lbr=1, no_hidden_size=True)),
    ("gru_lbr0_forward", dict(lbr=0)),
    ("gru_lbr1_forward", dict(lbr=1)),
    ("gru_lbr0_reverse_init_h", dict(lbr=0, dir="reverse", init=True)),
    ("gru_lbr1_reverse_init_h", dict(lbr=1, dir="reverse", init=True)),
    ("gru_lbr0_bidirectional_init_h", dict(lbr=0, dir="bidirectional", init=True)),
    ("gru_lbr1_bidirectional_init_h", dict(lbr=1, dir="bidirectional", init=True)),
    ("gru_lbr0_layout1_bidirectional_init_h", dict(lbr=0, dir="bidirectional", layout=1, init=True)),
    ("gru_lbr1_layout1_forward", dict(lbr=1, layout=1)),
    ("gru_lbr0_no_bias", dict(lbr=0, bias=False)),
    ("gru_lbr1_no_bias_reverse", dict(lbr=1, bias=False, dir="reverse")),
    ("gru_lbr0_acts_tanh_relu", dict(lbr=0, acts=["Tanh", "Relu"])),
    ("gru_lbr1_acts_sigmoid_sigmoid", dict(lbr=1, acts=["Sigmoid", "Sigmoid"])),
    ("gru_lbr1_bidirectional_acts_per_direction", dict(lbr=1, dir="bidirectional",
                                                       acts=["Sigmoid", "Relu", "Tanh", "Tanh"])),
    ("gru_lbr1_seqlens_forward", dict(lbr=1, lens=True)),
    ("gru_lbr1_seqlens_bidirectional_init_h", dict(lbr=1, lens=True, dir="bidirectional", init=True)),
    ("gru_lbr0_seqlens_reverse", dict(lbr=0, lens=True, dir="reverse")),
    ("gru_lbr0_seqlens_layout1_bidirectional", dict(lbr=0, lens=True, dir="bidirectional", layout=1)),
]
LSTM_VARIANTS = [
    ("lstm_clip_peepholes", dict(clip=0.4, peep=True)),
    ("lstm_no_hidden_size_reverse", dict(no_hidden_size=True, dir="reverse")),
    ("lstm_forward", dict()),
    ("lstm_reverse_init_hc", dict(dir="reverse", init=True)),
    ("lstm_bidirectional_init_hc", dict(dir="bidirectional", init=True)),
    ("lstm_layout1_bidirectional_init_hc", dict(dir="bidirectional", layout=1, init=True)),
    ("lstm_no_bias", dict(bias=False)),
    ("lstm_peepholes_forward_init_hc", dict(peep=True, init=True)),
    ("lstm_peepholes_bidirectional", dict(peep=True, dir="bidirectional")),
    ("lstm_acts_sigmoid_relu_tanh", dict(acts=["Sigmoid", "Relu", "Tanh"])),
    ("lstm_bidirectional_acts_per_direction", dict(dir="bidirectional",
                                                   acts=["Sigmoid", "Tanh", "Relu", "Tanh", "Sigmoid", "Tanh"])),
    ("lstm_seqlens_bidirectional_init_hc", dict(lens=True, dir="bidirectional", init=True)),
    ("lstm_seqlens_reverse", dict(lens=True, dir="reverse")),
    ("lstm_peepholes_seqlens_layout1_reverse", dict(peep=True, lens=True, layout=1, dir="reverse")),
]
RNN_VARIANTS = [
    ("rnn_relu_clip_reverse", dict(clip=0.25, acts=["Relu"], dir="reverse")),
    ("rnn_no_hidden_size", dict(no_hidden_size=True)),
    ("rnn_tanh_forward", dict()),
    ("rnn_relu_forward", dict(acts=["Relu"])),
    ("rnn_sigmoid_reverse_init_h", dict(acts=["Sigmoid"], dir="reverse", init=True)),
    ("rnn_bidirectional_init_h", dict(dir="bidirectional", init=True)),
    ("rnn_bidirectional_acts_relu_tanh", dict(dir="bidirectional", acts=["Relu", "Tanh"])),
    ("rnn_layout1_reverse_init_h", dict(layout=1, dir="reverse", init=True)),
    ("rnn_no_bias", dict(bias=False)),
    ("rnn_seqlens_bidirectional", dict(lens=True, dir="bidirectional")),
    ("rnn_relu_seqlens_layout1_forward_init_h", dict(lens=True, acts=["Relu"], layout=1, init=True)),
]


def _torch_computes(cell, v, acts):
    """Whether torch.nn's module computes this variant's function exactly."""
    if v.get("peep") or v.get("clip"):
        return False
    if cell == "GRU":
        return v["lbr"] == 1 and acts == DEFAULT_ACTS["GRU"] * (len(acts) // 2)
    if cell == "LSTM":
        return acts == DEFAULT_ACTS["LSTM"] * (len(acts) // 3)
    return acts[0] in ("Tanh", "Relu") and len(set(acts)) == 1


def build_recurrent(cell, variants):
    def build(case, rng, H):
        g = _Graph()
        x = H.randn(rng, (SEQ, BATCH, IN))
        G = GATES[cell]
        k = 1.0 / np.sqrt(HID)   # torch.nn's initialization range: O(1) states
        for name, v in variants:
            direction = v.get("dir", "forward")
            D = 2 if direction == "bidirectional" else 1
            layout = v.get("layout", 0)
            acts = v.get("acts") or DEFAULT_ACTS[cell]
            if D == 2 and len(acts) == len(DEFAULT_ACTS[cell]):
                acts = acts * 2
            w = rng.uniform(-k, k, (D, G * HID, IN)).astype(np.float32)
            r = rng.uniform(-k, k, (D, G * HID, HID)).astype(np.float32)
            b = rng.uniform(-k, k, (D, 2 * G * HID)).astype(np.float32) if v.get("bias", True) else None
            p = rng.uniform(-k, k, (D, 3 * HID)).astype(np.float32) if v.get("peep") else None
            h0 = H.randn(rng, (D, BATCH, HID), 0.5) if v.get("init") else None
            c0 = H.randn(rng, (D, BATCH, HID), 0.5) if v.get("init") and cell == "LSTM" else None
            lens = SEQ_LENS if v.get("lens") else None
            # Graph inputs shared by the variants that read the same layout / state shape.
            bf = (lambda a: a.transpose(1, 0, 2)) if layout else (lambda a: a)
            ins = [g.input("X_layout%d" % layout, np.ascontiguousarray(bf(x))),
                   g.const(name + "_W", w), g.const(name + "_R", r),
                   g.const(name + "_B", b) if b is not None else "",
                   g.const(name + "_sequence_lens", lens) if lens is not None else "",
                   g.input(name + "_initial_h", np.ascontiguousarray(bf(h0))) if h0 is not None else ""]
            if cell == "LSTM":
                ins += [g.input(name + "_initial_c", np.ascontiguousarray(bf(c0))) if c0 is not None else "",
                        g.const(name + "_P", p) if p is not None else ""]
            while ins[-1] == "":
                ins.pop()
            outs = [name + "_Y", name + "_Y_h"] + ([name + "_Y_c"] if cell == "LSTM" else [])
            attrs = dict(direction=direction, layout=layout)
            if not v.get("no_hidden_size"):   # optional: R's shape gives it
                attrs["hidden_size"] = HID
            if "acts" in v:
                attrs["activations"] = acts
            if cell == "GRU":
                attrs["linear_before_reset"] = v["lbr"]
            if v.get("clip"):
                attrs["clip"] = float(v["clip"])
            g.nodes.append(helper.make_node(cell, ins, outs, name=name, **attrs))
            f64 = (lambda a: None if a is None else a.astype(np.float64))
            refs = list(np_recurrent(cell, f64(x), f64(w), f64(r), f64(b), f64(h0), f64(c0), f64(p),
                                     lens, direction, acts, v.get("lbr", 0), v.get("clip")))
            if _torch_computes(cell, v, acts):
                theirs = torch_recurrent(cell, x, w, r, b, h0, c0,
                                         None if lens is None else list(lens), direction, acts)
                for o, ours, t in zip(outs, refs, theirs):
                    _check_agree(o, ours, t)
                refs = theirs
            refs = refs[:len(outs)]
            if layout:   # layout 1: Y [N,S,D,H], states [N,D,H]
                refs = [refs[0].transpose(2, 0, 1, 3)] + [s.transpose(1, 0, 2) for s in refs[1:]]
            for o, ref in zip(outs, refs):
                g.output(o, ref)
        return g.build(H, case.opset)
    return build


class TorchRecurrent(nn.Module):
    """torch.nn's cells as torch.onnx.export writes them: batch_first, bidirectional, initial
    states given."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(IN, HID, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(IN, HID, batch_first=True, bidirectional=True)
        self.rnn = nn.RNN(IN, HID, nonlinearity="relu", batch_first=True, bidirectional=True)

    def forward(self, x, h0, c0):
        y1, h1 = self.gru(x, h0)
        y2, (h2, c2) = self.lstm(x, (h0, c0))
        y3, h3 = self.rnn(x, h0)
        return y1, h1, y2, h2, c2, y3, h3


# --------------------------------------------------------------------------------------------
# Resize
# --------------------------------------------------------------------------------------------

def _cubic_weights(t, a):
    """Keys' cubic convolution weights of the taps at distances 1+t, t, 1-t, 2-t."""
    def k(s):
        s = abs(s)
        if s <= 1:
            return (a + 2) * s ** 3 - (a + 3) * s ** 2 + 1
        if s < 2:
            return a * s ** 3 - 5 * a * s ** 2 + 8 * a * s - 4 * a
        return 0.0
    return [k(1 + t), k(t), k(1 - t), k(2 - t)]


def _axis_table(n_in, n_out, scale, mode, ctm, nearest_mode, a, exclude_outside, roi):
    """[n_out, n_in] interpolation matrix of one axis and the mask of outputs whose coordinate is
    outside the input (tf_crop_and_resize's extrapolation)."""
    m = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, bool)
    for o in range(n_out):
        if ctm == "half_pixel":
            xo = (o + 0.5) / scale - 0.5
        elif ctm == "pytorch_half_pixel":
            xo = (o + 0.5) / scale - 0.5 if n_out > 1 else 0.0
        elif ctm == "align_corners":
            # length 1 divides by zero; only the batch axis (1 -> 1) has it here: 0 as onnx's reference
            xo = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        elif ctm == "asymmetric":
            xo = o / scale
        elif ctm == "tf_half_pixel_for_nn":
            xo = (o + 0.5) / scale
        elif ctm == "tf_crop_and_resize":
            start, end = roi
            if n_out > 1:
                xo = start * (n_in - 1) + o * (end - start) * (n_in - 1) / (n_out - 1)
            else:
                xo = 0.5 * (start + end) * (n_in - 1)
            if xo < 0 or xo > n_in - 1:
                outside[o] = True
                continue
        else:
            raise ValueError(ctm)
        if mode == "nearest":
            lo = np.floor(xo)
            frac = xo - lo
            if nearest_mode == "floor":
                i = lo
            elif nearest_mode == "ceil":
                i = np.ceil(xo)
            elif frac == 0.5:
                i = lo if nearest_mode == "round_prefer_floor" else lo + 1
            else:
                i = np.floor(xo + 0.5)
            taps, ws = [int(i)], [1.0]
        elif mode == "linear":
            lo = int(np.floor(xo))
            t = xo - lo
            taps, ws = [lo, lo + 1], [1.0 - t, t]
        else:
            lo = int(np.floor(xo))
            t = xo - lo
            taps, ws = [lo - 1, lo, lo + 1, lo + 2], _cubic_weights(t, a)
        if exclude_outside:
            ws = [w if 0 <= tp < n_in else 0.0 for tp, w in zip(taps, ws)]
            ws = [w / sum(ws) for w in ws]
        for tp, w in zip(taps, ws):   # otherwise a tap outside reads the edge
            m[o, min(max(tp, 0), n_in - 1)] += w
    return m, outside


def np_resize(x, mode, ctm, nearest_mode="round_prefer_floor", a=-0.75, exclude_outside=0,
              extrapolation=0.0, roi=None, scales=None, sizes=None):
    """Resize (opsets 11/13) from its spec: per axis, the output coordinate mapped to the input by
    coordinate_transformation_mode, then nearest / linear / cubic weights (N-linear and N-cubic
    are separable). scale = the given scale, or sizes / input length."""
    y = x.astype(np.float64)
    rank = x.ndim
    outside = np.zeros((), bool)
    for ax in range(rank):
        n_in = x.shape[ax]
        if sizes is not None:
            n_out = int(sizes[ax])
            scale = n_out / n_in
        else:
            scale = float(scales[ax])
            n_out = int(np.floor(n_in * scale))
        ax_roi = None if roi is None else (float(roi[ax]), float(roi[ax + rank]))
        m, out_ax = _axis_table(n_in, n_out, scale, mode, ctm, nearest_mode, a, exclude_outside, ax_roi)
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, ax, 0), axes=1), 0, ax)
        shape = [1] * rank
        shape[ax] = n_out
        outside = outside | out_ax.reshape(shape)
    return np.where(outside, extrapolation, y)


def torch_resize(x, mode, ctm, nearest_mode, a, exclude_outside, scales, sizes):
    """F.interpolate where it computes exactly this Resize, else None."""
    kw = {}
    if sizes is not None:
        kw["size"] = [int(s) for s in sizes[2:]]
    else:
        kw["scale_factor"] = [float(s) for s in scales[2:]]
        kw["recompute_scale_factor"] = False   # the given factors map the coordinates, as in ONNX
    if mode == "nearest":
        if (ctm, nearest_mode) == ("asymmetric", "floor"):
            tmode = "nearest"
        elif (ctm, nearest_mode) == ("half_pixel", "round_prefer_ceil"):
            tmode = "nearest-exact"
        else:
            return None
    else:
        if mode == "cubic" and (a != -0.75 or exclude_outside):
            return None
        if ctm == "align_corners":
            kw["align_corners"] = True
        elif ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and min(sizes[2:] if sizes is not None else [2]) > 1):
            kw["align_corners"] = False
        else:
            return None
        tmode = "bilinear" if mode == "linear" else "bicubic"
    with torch.no_grad():
        return F.interpolate(torch.from_numpy(x), mode=tmode, **kw).numpy()


def _resize_node(g, name, x_name, x, opset, mode, ctm, nearest_mode=None, a=None, exclude_outside=None,
                 extrapolation=None, roi=None, scales=None, sizes=None):
    """One Resize node and its output; reference from numpy, checked against torch where it applies."""
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    for key, val in (("nearest_mode", nearest_mode), ("cubic_coeff_a", a), ("exclude_outside", exclude_outside),
                     ("extrapolation_value", extrapolation)):
        if val is not None:
            attrs[key] = val
    scales_arr = None if scales is None else np.array(scales, np.float32)
    sizes_arr = None if sizes is None else np.array(sizes, np.int64)
    roi_arr = None if roi is None else np.array(roi, np.float32)
    if opset >= 13:   # roi and scales optional: empty names
        ins = [x_name, g.const(name + "_roi", roi_arr) if roi is not None else "",
               g.const(name + "_scales", scales_arr) if scales is not None else ""]
    else:             # opset 11: roi and scales required; scales empty when sizes are given
        ins = [x_name, g.const(name + "_roi", roi_arr) if roi is not None else g.const("roi_empty", np.zeros(0, np.float32)),
               g.const(name + "_scales", scales_arr) if scales is not None else g.const("scales_empty", np.zeros(0, np.float32))]
    if sizes is not None:
        ins.append(g.const(name + "_sizes", sizes_arr))
    while ins[-1] == "":
        ins.pop()
    g.nodes.append(helper.make_node("Resize", ins, [name], name=name, **attrs))
    # numpy reads the scales as the float32 values the model holds
    ref = np_resize(x, mode, ctm, nearest_mode or "round_prefer_floor", -0.75 if a is None else a,
                    exclude_outside or 0, extrapolation or 0.0, roi_arr, scales_arr, sizes_arr)
    t = None if ctm == "tf_crop_and_resize" else torch_resize(
        x, mode, ctm, nearest_mode or "round_prefer_floor", -0.75 if a is None else a, exclude_outside or 0,
        scales_arr, sizes_arr)
    if t is not None:
        _check_agree(name, ref, t)
        ref = t
    g.output(name, ref)


# Two inputs: sizes resize [1,2,5,8] to [1,2,8,5], scales resize [1,2,6,8] by (1.5, 0.625) to
# [1,2,9,5]; both factors are exact in float32 and give whole lengths, so the output length and
# the coordinate mapping do not depend on how an implementation rounds them.
SIZES_IN, SIZES_OUT = (1, 2, 5, 8), (1, 2, 8, 5)
SCALES_IN, SCALES = (1, 2, 6, 8), (1.0, 1.0, 1.5, 0.625)
SPATIAL_CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _resize_inputs(g, H, rng, one_channel=False):
    xs = H.randn(rng, SIZES_IN)
    xc = H.randn(rng, SCALES_IN)
    res = {"sizes": (g.input("X_sizes", xs), xs), "scales": (g.input("X_scales", xc), xc)}
    if one_channel:
        res["sizes_1ch"] = (g.input("X_sizes_1ch", xs[:, :1].copy()), xs[:, :1].copy())
        res["scales_1ch"] = (g.input("X_scales_1ch", xc[:, :1].copy()), xc[:, :1].copy())
    return res


def _by(src, channels=2):
    return dict(sizes=SIZES_OUT[:1] + (channels,) + SIZES_OUT[2:]) if src == "sizes" else dict(scales=SCALES)


def build_resize_nearest(case, rng, H):
    g = _Graph()
    xin = _resize_inputs(g, H, rng)
    for src in ("sizes", "scales"):
        for ctm in SPATIAL_CTMS:
            for nm in NEAREST_MODES:
                _resize_node(g, "nearest__%s__%s__%s" % (ctm, nm, src), *xin[src], case.opset, "nearest", ctm,
                             nearest_mode=nm, **_by(src))
    # Output length 1: pytorch_half_pixel maps it to 0, half_pixel to the middle.
    for ctm in ("pytorch_half_pixel", "half_pixel"):
        _resize_node(g, "nearest__%s__out_length1" % ctm, *xin["sizes"], case.opset, "nearest", ctm,
                     nearest_mode="round_prefer_ceil", sizes=(1, 2, 1, 3))
    return g.build(H, case.opset)


def build_resize_linear_cubic(case, rng, H):
    g = _Graph()
    xin = _resize_inputs(g, H, rng)
    for src in ("sizes", "scales"):
        for ctm in SPATIAL_CTMS:
            _resize_node(g, "linear__%s__%s" % (ctm, src), *xin[src], case.opset, "linear", ctm, **_by(src))
            for a in (-0.75, -0.5):
                for excl in (0, 1):
                    _resize_node(g, "cubic__%s__a%s__exclude_outside%d__%s" % (ctm, str(-a).replace(".", "_"), excl, src),
                                 *xin[src], case.opset, "cubic", ctm, a=a, exclude_outside=excl, **_by(src))
    for mode in ("linear", "cubic"):
        _resize_node(g, "%s__pytorch_half_pixel__out_length1" % mode, *xin["sizes"], case.opset, mode,
                     "pytorch_half_pixel", sizes=(1, 2, 1, 3))
    return g.build(H, case.opset)


def build_resize_crop(case, rng, H):
    """tf_crop_and_resize: a roi reaching past the input on some axes (extrapolation_value there)."""
    g = _Graph()
    xin = _resize_inputs(g, H, rng)
    # sizes: any roi. N and C keep [0, 1].
    roi_sizes = (0, 0, -0.2, 0.1, 1, 1, 0.7, 1.15)
    # scales: spec says output length floor(length * (roi_end - roi_start) * scale) while onnx's
    # shape inference uses floor(length * scale); a roi 1 wide in every axis makes both agree.
    roi_scales = (0, 0, -0.25, 0.125, 1, 1, 0.75, 1.125)
    variants = [("nearest", dict(nearest_mode="round_prefer_floor")), ("nearest", dict(nearest_mode="ceil")),
                ("linear", {}), ("cubic", dict(a=-0.5, exclude_outside=0)), ("cubic", dict(a=-0.75, exclude_outside=1))]
    for src, roi in (("sizes", roi_sizes), ("scales", roi_scales)):
        for mode, kw in variants:
            tag = "__".join([mode] + ["%s%s" % (k if k != "nearest_mode" else "", v) for k, v in kw.items()])
            _resize_node(g, ("tf_crop_and_resize__%s__%s" % (tag, src)).replace(".", "_").replace("-", "m"),
                         *xin[src], case.opset, mode, "tf_crop_and_resize", extrapolation=0.75, roi=roi, **kw, **_by(src))
    # default extrapolation_value (0), and an output length of 1 (the roi's middle)
    _resize_node(g, "tf_crop_and_resize__linear__default_extrapolation__sizes", *xin["sizes"], case.opset, "linear",
                 "tf_crop_and_resize", roi=roi_sizes, sizes=SIZES_OUT)
    _resize_node(g, "tf_crop_and_resize__linear__out_length1", *xin["sizes"], case.opset, "linear",
                 "tf_crop_and_resize", extrapolation=0.75, roi=(0, 0, 0.3, -0.1, 1, 1, 0.9, 0.8), sizes=(1, 2, 1, 4))
    return g.build(H, case.opset)


def build_resize_opset11(case, rng, H):
    """Resize-11: roi and scales required inputs (empty tensors when unused), and
    tf_half_pixel_for_nn (dropped from Resize-13)."""
    g = _Graph()
    xin = _resize_inputs(g, H, rng, one_channel=True)
    for src in ("sizes", "scales"):
        for nm in NEAREST_MODES:
            # Read literally, tf_half_pixel_for_nn maps an axis that is not resized (N, C) to
            # o + 0.5, which ceil and round_prefer_ceil turn into o + 1: the next channel. Loom
            # leaves such axes alone. Single-channel inputs (the index clamps to 0) make both agree.
            ceil = nm in ("ceil", "round_prefer_ceil")
            _resize_node(g, "nearest__tf_half_pixel_for_nn__%s__%s" % (nm, src), *xin[src + "_1ch" if ceil else src],
                         case.opset, "nearest", "tf_half_pixel_for_nn", nearest_mode=nm, **_by(src, 1 if ceil else 2))
        _resize_node(g, "nearest__asymmetric__floor__%s" % src, *xin[src], case.opset, "nearest", "asymmetric",
                     nearest_mode="floor", **_by(src))
        _resize_node(g, "linear__half_pixel__%s" % src, *xin[src], case.opset, "linear", "half_pixel", **_by(src))
        _resize_node(g, "cubic__align_corners__a0_5__%s" % src, *xin[src], case.opset, "cubic", "align_corners",
                     a=-0.5, **_by(src))
    _resize_node(g, "linear__tf_crop_and_resize__sizes", *xin["sizes"], case.opset, "linear", "tf_crop_and_resize",
                 extrapolation=-1.0, roi=(0, 0, -0.2, 0.1, 1, 1, 0.7, 1.15), sizes=SIZES_OUT)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------

def _np_reduce(op, x, axes, keepdims):
    ax = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    x = x.astype(np.float64)
    f = {"ReduceSum": lambda: x.sum(ax, keepdims=True),
         "ReduceMean": lambda: x.mean(ax, keepdims=True),
         "ReduceMax": lambda: x.max(ax, keepdims=True),
         "ReduceMin": lambda: x.min(ax, keepdims=True),
         "ReduceProd": lambda: x.prod(ax, keepdims=True),
         "ReduceL1": lambda: np.abs(x).sum(ax, keepdims=True),
         "ReduceL2": lambda: np.sqrt((x * x).sum(ax, keepdims=True)),
         "ReduceLogSum": lambda: np.log(x.sum(ax, keepdims=True)),
         "ReduceLogSumExp": lambda: np.log(np.exp(x).sum(ax, keepdims=True)),
         "ReduceSumSquare": lambda: (x * x).sum(ax, keepdims=True)}[op]()
    return f if keepdims else f.reshape([n for i, n in enumerate(x.shape) if i not in ax])


def _torch_reduce(op, x, axes, keepdims):
    t = torch.from_numpy(x)
    dims = list(range(x.ndim)) if axes is None else list(axes)
    with torch.no_grad():
        if op == "ReduceProd":   # torch.prod takes one dim at a time
            y = t
            for d in sorted((d % x.ndim for d in dims), reverse=True):
                y = torch.prod(y, dim=d, keepdim=keepdims)
            return y.numpy()
        fn = {"ReduceSum": lambda: torch.sum(t, dims, keepdim=keepdims),
              "ReduceMean": lambda: torch.mean(t, dims, keepdim=keepdims),
              "ReduceMax": lambda: torch.amax(t, dims, keepdim=keepdims),
              "ReduceMin": lambda: torch.amin(t, dims, keepdim=keepdims),
              "ReduceL1": lambda: torch.sum(t.abs(), dims, keepdim=keepdims),
              "ReduceL2": lambda: torch.linalg.vector_norm(t, 2, dims, keepdim=keepdims),
              "ReduceLogSum": lambda: torch.log(torch.sum(t, dims, keepdim=keepdims)),
              "ReduceLogSumExp": lambda: torch.logsumexp(t, dims, keepdim=keepdims),
              "ReduceSumSquare": lambda: torch.sum(t * t, dims, keepdim=keepdims)}[op]
        return fn().numpy()


REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
# (tag, axes (None: attribute absent), keepdims (None: attribute absent, default 1))
# Reducing every axis with keepdims=0 (a rank-0 result) is left out: Loom refuses rank-0 tensors.
AXES_VARIANTS = [("axes1_keepdims1", [1], 1), ("axes_m1_keepdims0", [-1], 0), ("axes0_2_keepdims0", [0, 2], 0),
                 ("axes_m3_3_keepdims1", [-3, 3], 1), ("all_default_keepdims", None, None),
                 ("axes_all_listed_keepdims1", [0, -3, 2, -1], 1), ("axes_m4_1_2_keepdims0", [-4, 1, 2], 0)]
REDUCE_SHAPE = (2, 3, 4, 5)
REDUCE18_OPS = [op for op in REDUCE_OPS if op != "ReduceSum"]   # ReduceSum-18 is ReduceSum-13


def _reduce_inputs(g, H, rng):
    # Magnitudes near 1 keep products of up to 120 values O(1); ReduceLogSum needs positive sums.
    mag = rng.uniform(0.75, 1.3, REDUCE_SHAPE)
    x = (mag * np.where(rng.random(REDUCE_SHAPE) < 0.5, -1.0, 1.0)).astype(np.float32)
    pos = rng.uniform(0.2, 2.0, REDUCE_SHAPE).astype(np.float32)
    return {"x": (g.input("X_signed", x), x), "pos": (g.input("X_positive", pos), pos)}


def _reduce_output(g, name, op, x, axes, keepdims):
    ours = _np_reduce(op, x, axes, 1 if keepdims is None else keepdims)
    theirs = _torch_reduce(op, x, axes, True if keepdims is None else bool(keepdims))
    _check_agree(name, ours, theirs)
    g.output(name, theirs)


def build_reduce_opset13(case, rng, H, ops):
    g = _Graph()
    xin = _reduce_inputs(g, H, rng)
    for op in ops:
        x_name, x = xin["pos" if op == "ReduceLogSum" else "x"]
        for tag, axes, keepdims in AXES_VARIANTS:
            name = "%s__%s" % (op.lower(), tag)
            attrs = {} if keepdims is None else dict(keepdims=keepdims)
            ins = [x_name]
            if op == "ReduceSum":   # opset 13: axes is an optional input
                if axes is not None:
                    ins.append(g.const(name + "_axes", np.array(axes, np.int64)))
            elif axes is not None:
                attrs["axes"] = axes
            g.nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
            _reduce_output(g, name, op, x, axes, keepdims)
    if "ReduceSum" not in ops:
        return g.build(H, case.opset)
    # ReduceSum-13's noop_with_empty_axes: empty (or absent) axes reduce everything with 0 and
    # are an identity with 1; given axes reduce either way.
    x_name, x = xin["x"]
    empty = g.const("axes_empty", np.zeros(0, np.int64))
    for tag, axes_in, noop, keepdims in [("empty_axes_noop0", empty, 0, 1), ("empty_axes_noop1", empty, 1, 0),
                                         ("no_axes_noop1", None, 1, 1), ("axes2_noop1", [2], 1, 0)]:
        name = "reducesum__" + tag
        ins = [x_name]
        if isinstance(axes_in, list):
            ins.append(g.const(name + "_axes", np.array(axes_in, np.int64)))
        elif axes_in is not None:
            ins.append(axes_in)
        g.nodes.append(helper.make_node("ReduceSum", ins, [name], name=name, keepdims=keepdims,
                                        noop_with_empty_axes=noop))
        if noop and not isinstance(axes_in, list):
            g.output(name, x)   # identity
        else:
            _reduce_output(g, name, "ReduceSum", x, axes_in if isinstance(axes_in, list) else None, keepdims)
    return g.build(H, case.opset)


def build_reduce_sum_opset12(case, rng, H):
    """ReduceSum before opset 13: axes an attribute."""
    g = _Graph()
    x_name, x = _reduce_inputs(g, H, rng)["x"]
    for tag, axes, keepdims in AXES_VARIANTS:
        name = "reducesum__" + tag
        attrs = {} if keepdims is None else dict(keepdims=keepdims)
        if axes is not None:
            attrs["axes"] = axes
        g.nodes.append(helper.make_node("ReduceSum", [x_name], [name], name=name, **attrs))
        _reduce_output(g, name, "ReduceSum", x, axes, keepdims)
    return g.build(H, case.opset)


# Opset 18: axes an optional input of every Reduce*, and noop_with_empty_axes. (tag, axes: a list
# (the input), "empty" (an empty input) or None (no input); noop_with_empty_axes and keepdims:
# None leaves the attribute out (defaults 0 and 1).) Empty or absent axes reduce every axis, or
# with noop_with_empty_axes=1 make the node the identity; given axes reduce either way.
REDUCE18_VARIANTS = [("axes1_keepdims1", [1], None, 1), ("axes_m1_0_keepdims0", [-1, 0], None, 0),
                     ("axes2_noop1_keepdims0", [2], 1, 0), ("axes_m3_3_noop0", [-3, 3], 0, None),
                     ("no_axes_defaults", None, None, None), ("no_axes_noop0_keepdims1", None, 0, 1),
                     ("empty_axes_noop0", "empty", 0, 1), ("no_axes_noop1", None, 1, 0),
                     ("empty_axes_noop1", "empty", 1, 1)]


def build_reduce_opset18(case, rng, H, ops):
    g = _Graph()
    xin = _reduce_inputs(g, H, rng)
    empty = g.const("axes_empty", np.zeros(0, np.int64))
    for op in ops:
        x_name, x = xin["pos" if op == "ReduceLogSum" else "x"]
        for tag, axes, noop, keepdims in REDUCE18_VARIANTS:
            name = "%s__%s" % (op.lower(), tag)
            attrs = {k: v for k, v in (("keepdims", keepdims), ("noop_with_empty_axes", noop)) if v is not None}
            ins = [x_name]
            if axes == "empty":
                ins.append(empty)
            elif axes is not None:
                ins.append(g.const(name + "_axes", np.array(axes, np.int64)))
            g.nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
            if noop and not isinstance(axes, list):
                g.output(name, x)   # the identity
            else:
                _reduce_output(g, name, op, x, axes if isinstance(axes, list) else None, keepdims)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Windows: pools with auto_pad VALID, Conv without kernel_shape, ConvTranspose auto_pad
# --------------------------------------------------------------------------------------------

def spec_pads(auto_pad, in_hw, kernel, strides, dilations, pads=None):
    """[(begin, end)] per spatial axis from the Conv / pool auto_pad text: SAME_* pad so that the
    output is ceil(in / stride), the total split evenly with the odd one at the end (SAME_UPPER)
    or the beginning (SAME_LOWER); VALID pads nothing; NOTSET uses `pads` [x1_begin, x2_begin,
    ..., x1_end, x2_end, ...]."""
    r = len(in_hw)
    if auto_pad == "NOTSET":
        pads = pads or [0] * (2 * r)
        return [(pads[i], pads[i + r]) for i in range(r)]
    if auto_pad == "VALID":
        return [(0, 0)] * r
    res = []
    for n, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        res.append((total // 2, total - total // 2) if auto_pad == "SAME_UPPER" else (total - total // 2, total // 2))
    return res


def _torch_pad_arg(pads):
    """[(begin, end)] per spatial axis -> F.pad's (last axis first)."""
    return tuple(v for b, e in reversed(pads) for v in (b, e))


@torch.no_grad()
def torch_conv(x, w, b, pads, strides, dilations, group):
    """float64 convolution of x padded with zeros by `pads` (1-D or 2-D)."""
    conv = F.conv1d if x.ndim == 3 else F.conv2d
    xt = F.pad(torch.from_numpy(np.asarray(x, np.float64)), _torch_pad_arg(pads))
    bt = None if b is None else torch.from_numpy(np.asarray(b, np.float64))
    return conv(xt, torch.from_numpy(np.asarray(w, np.float64)), bt, stride=strides, dilation=dilations,
                groups=group).numpy()


def np_conv_transpose(x, w, b, strides, dilations, group, pads, out_pad):
    """ConvTranspose-11 from its spec, 2-D, float64: every input element adds its value times the
    kernel at (i * stride + k * dilation); the full result (output_padding more at the end) then
    loses pads[begin] / pads[end]."""
    N, C, H, W = x.shape
    _, Mg, KH, KW = w.shape
    Cg = C // group
    sh, sw = strides
    dh, dw = dilations
    full = np.zeros((N, Mg * group, sh * (H - 1) + out_pad[0] + (KH - 1) * dh + 1,
                     sw * (W - 1) + out_pad[1] + (KW - 1) * dw + 1))
    for gi in range(group):
        for c in range(gi * Cg, (gi + 1) * Cg):
            for i in range(H):
                for j in range(W):
                    for kh in range(KH):
                        for kw in range(KW):
                            full[:, gi * Mg:(gi + 1) * Mg, i * sh + kh * dh, j * sw + kw * dw] += \
                                x[:, c, i, j][:, None] * w[c, :, kh, kw][None, :]
    if b is not None:
        full += b.reshape(1, -1, 1, 1)
    (pt, pb), (pl, pr) = pads
    return full[:, :, pt:full.shape[2] - pb, pl:full.shape[3] - pr]


def conv_transpose_pads(auto_pad, in_hw, kernel, strides, dilations, out_pad, pads=None):
    """ConvTranspose's pads: SAME_* make the output input * stride, total_padding =
    stride * (in - 1) + output_padding + ((kernel - 1) * dilation + 1) - output_shape, split as
    the spec says: SAME_UPPER pads[start] = total / 2, pads[end] = total - total / 2; else
    pads[start] = total - total / 2, pads[end] = total / 2. VALID: none; NOTSET: `pads`."""
    if auto_pad in ("NOTSET", "VALID"):
        return spec_pads(auto_pad, in_hw, kernel, strides, dilations, pads)
    res = []
    for n, k, s, d, op in zip(in_hw, kernel, strides, dilations, out_pad):
        total = s * (n - 1) + op + (k - 1) * d + 1 - n * s
        res.append((total // 2, total - total // 2) if auto_pad == "SAME_UPPER" else (total - total // 2, total // 2))
    return res


@torch.no_grad()
def torch_conv_transpose(x, w, b, strides, dilations, group, pads, out_pad):
    """F.conv_transpose2d without padding (output_padding at the end), then cropped by pads."""
    y = F.conv_transpose2d(torch.from_numpy(x.astype(np.float64)), torch.from_numpy(w.astype(np.float64)),
                           None if b is None else torch.from_numpy(b.astype(np.float64)), stride=strides,
                           output_padding=out_pad, groups=group, dilation=dilations).numpy()
    (pt, pb), (pl, pr) = pads
    return y[:, :, pt:y.shape[2] - pb, pl:y.shape[3] - pr]


def build_window_modes(case, rng, H):
    """MaxPool / AveragePool with auto_pad VALID (onnx's own pool reference of its backend tests
    cross-checks torch); Conv without kernel_shape (from W's shape)."""
    from onnx.backend.test.case.node.pool_op_common import pool as onnx_pool, get_output_shape
    g = _Graph()
    x = H.randn(rng, (1, 3, 9, 10))
    xn = g.input("X", x)
    for op, k, s, extra in (("MaxPool", [3, 2], [2, 3], {}), ("AveragePool", [2, 3], [3, 2], {}),
                            ("AveragePool", [3, 3], [2, 2], dict(count_include_pad=1))):
        name = "%s__valid__k%d%d_s%d%d%s" % (op.lower(), k[0], k[1], s[0], s[1],
                                             "__count_include_pad1" if extra else "")
        g.nodes.append(helper.make_node(op, [xn], [name], name=name, kernel_shape=k, strides=s, auto_pad="VALID",
                                        **extra))
        with torch.no_grad():   # VALID: no padding, the windows that fit
            fn = F.max_pool2d if op == "MaxPool" else F.avg_pool2d
            ref = fn(torch.from_numpy(x.astype(np.float64)), k, s).numpy()
        out_shape = get_output_shape("VALID", x.shape[2:], k, s)
        theirs = onnx_pool(x.astype(np.float64), x.shape, k, s, out_shape, [0, 0], "MAX" if op == "MaxPool" else "AVG")
        _check_agree(name, theirs.astype(np.float64), ref)
        g.output(name, ref)
    # A dilated MaxPool with VALID (onnx's pool has no dilations): torch alone.
    name = "maxpool__valid__k22_d21_s12"
    g.nodes.append(helper.make_node("MaxPool", [xn], [name], name=name, kernel_shape=[2, 2], dilations=[2, 1],
                                    strides=[1, 2], auto_pad="VALID"))
    with torch.no_grad():
        g.output(name, F.max_pool2d(torch.from_numpy(x), [2, 2], [1, 2], dilation=[2, 1]).numpy())

    # Conv without kernel_shape: 2-D (explicit pads, strides) and 1-D (SAME_LOWER).
    for name, xshape, wshape, attrs in (
            ("conv__no_kernel_shape__pads_strides", None, (4, 3, 3, 2), dict(pads=[1, 0, 2, 1], strides=[2, 1])),
            ("conv__no_kernel_shape__group3_same_upper", None, (6, 1, 2, 3), dict(group=3, auto_pad="SAME_UPPER",
                                                                                  strides=[2, 2])),
            ("conv1d__no_kernel_shape__same_lower", (1, 3, 11), (2, 3, 4), dict(auto_pad="SAME_LOWER", strides=[3]))):
        xi, xin = (x, xn) if xshape is None else (H.randn(rng, xshape), None)
        if xin is None:
            xin = g.input("X_" + name, xi)
        w = H.randn(rng, wshape, 1.0 / np.sqrt(np.prod(wshape[1:])))
        b = H.randn(rng, (wshape[0],), 0.1)
        g.nodes.append(helper.make_node("Conv", [xin, g.const(name + "_W", w), g.const(name + "_B", b)], [name],
                                        name=name, **attrs))
        r = xi.ndim - 2
        strides, group = attrs.get("strides", [1] * r), attrs.get("group", 1)
        pads = spec_pads(attrs.get("auto_pad", "NOTSET"), xi.shape[2:], wshape[2:], strides, [1] * r, attrs.get("pads"))
        ref = torch_conv(xi, w, b, pads, strides, [1] * r, group)
        if r == 2:   # export_test_models.py's numpy Conv (its own reading of the pads)
            _check_agree(name, H.np_conv(xi.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                                         dict(attrs, kernel_shape=list(wshape[2:]))), ref)
        g.output(name, ref)
    return g.build(H, case.opset)


def build_conv_transpose_modes(case, rng, H):
    """ConvTranspose with auto_pad SAME_UPPER / SAME_LOWER on odd total paddings, and VALID."""
    g = _Graph()
    # total paddings 3 (H) and 1 (W) in the first two, so that SAME_UPPER and SAME_LOWER differ
    xt = H.randn(rng, (1, 4, 4, 5))
    xtn = g.input("X_convtranspose", xt)
    for name, wshape, attrs in (
            ("convtranspose__same_lower__k54_s23", (4, 2, 5, 4), dict(auto_pad="SAME_LOWER", strides=[2, 3])),
            ("convtranspose__same_upper__k54_s23", (4, 2, 5, 4), dict(auto_pad="SAME_UPPER", strides=[2, 3])),
            ("convtranspose__same_lower__k33_d21_s22_group2", (4, 3, 3, 3),
             dict(auto_pad="SAME_LOWER", strides=[2, 2], dilations=[2, 1], group=2)),
            ("convtranspose__same_lower__output_padding", (4, 2, 3, 2),
             dict(auto_pad="SAME_LOWER", strides=[3, 2], output_padding=[1, 1])),
            ("convtranspose__valid__output_padding_group2", (4, 2, 2, 3),
             dict(auto_pad="VALID", strides=[3, 2], output_padding=[2, 1], group=2))):
        w = H.randn(rng, wshape, 1.0 / np.sqrt(np.prod(wshape[1:])))
        b = H.randn(rng, (wshape[1] * attrs.get("group", 1),), 0.1)
        g.nodes.append(helper.make_node("ConvTranspose", [xtn, g.const(name + "_W", w), g.const(name + "_B", b)],
                                        [name], name=name, **attrs))
        strides, dil = attrs["strides"], attrs.get("dilations", [1, 1])
        group, out_pad = attrs.get("group", 1), attrs.get("output_padding", [0, 0])
        pads = conv_transpose_pads(attrs["auto_pad"], xt.shape[2:], wshape[2:], strides, dil, out_pad)
        ours = np_conv_transpose(xt.astype(np.float64), w.astype(np.float64), b.astype(np.float64), strides, dil,
                                 group, pads, out_pad)
        ref = torch_conv_transpose(xt, w, b, strides, dil, group, pads, out_pad)
        _check_agree(name, ours, ref)
        if attrs["auto_pad"] != "VALID":
            assert ref.shape[2:] == tuple(n * s for n, s in zip(xt.shape[2:], strides)), name
        g.output(name, ref)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Quantized operators: ConvInteger, QLinearConv, QuantizeLinear, DequantizeLinear, MatMulInteger
# --------------------------------------------------------------------------------------------

U8, I8, I32, I64 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32, TensorProto.INT64
NP_TYPE = {U8: np.uint8, I8: np.int8, I32: np.int32}
RANGE = {U8: (0, 255), I8: (-128, 127)}


def _ints(rng, shape, elem, lo=None, hi=None):
    a, b = RANGE[elem]
    return rng.integers(a if lo is None else lo, (b if hi is None else hi) + 1, shape).astype(NP_TYPE[elem])


def _around(rng, shape, elem, zp, spread):
    """Integers of type elem within `spread` of the zero point (a vector: one per index of the
    first axis; absent: 0, or [0, spread] for uint8)."""
    lo, hi = RANGE[elem]
    if zp is None:
        c, d = (0, rng.integers(0, spread + 1, shape)) if elem == U8 else (0, rng.integers(-spread, spread + 1, shape))
    else:
        c = zp.astype(np.int64).reshape((-1,) + (1,) * (len(shape) - 1)) if zp.ndim else int(zp)
        d = rng.integers(-spread, spread + 1, shape)
    return np.clip(c + d, lo, hi).astype(NP_TYPE[elem])


def _requantize(v, zp, elem, name):
    """saturate(round(v) + zero point) with rounding half to even (the spec's QuantizeLinear). Loom
    computes v in float32: no v may lie so near a tie (x.5) that float32 rounding could move it
    across, nor is a variant whose values all saturate worth having."""
    near = np.abs(v - np.floor(v) - 0.5) <= 1e-6 * np.maximum(1.0, np.abs(v))   # float32: a few ulps
    assert not near.any(), "%s: %s too near a rounding tie" % (name, v[near])
    lo, hi = RANGE[elem]
    y = np.clip(np.round(v) + zp, lo, hi)
    inside = np.mean((y > lo) & (y < hi))
    assert inside > 0.6, "%s: %.0f%% saturated" % (name, 100 * (1 - inside))
    return y.astype(NP_TYPE[elem])


# (name, op, x type, w type, x_zero_point (None: absent), w_zero_point ("scalar", "channel",
# None), Conv attributes, QLinearConv: bias present). Zero points are drawn in the type's range.
QCONV_VARIANTS = [
    ("convinteger__no_zero_points__kernel_shape_pads", "ConvInteger", U8, U8, None, None,
     dict(kernel_shape=[3, 3], pads=[1, 0, 0, 2])),
    ("convinteger__w_zp_channel__x_zp__strides_dilations", "ConvInteger", U8, U8, "scalar", "channel",
     dict(kernel_shape=[3, 2], strides=[2, 1], dilations=[1, 2])),
    ("convinteger__w_zp_scalar__same_upper_strides", "ConvInteger", U8, U8, None, "scalar",
     dict(auto_pad="SAME_UPPER", strides=[2, 3])),
    ("convinteger__x_zp__same_lower_group2", "ConvInteger", U8, I8, "scalar", None,
     dict(auto_pad="SAME_LOWER", strides=[2, 2], group=2)),
    ("convinteger__int8__w_zp_channel__valid", "ConvInteger", I8, I8, "scalar", "channel",
     dict(auto_pad="VALID", strides=[1, 2], kernel_shape=[2, 3])),
    ("qlinearconv__bias__w_channel__kernel_shape_pads_strides_dilations", "QLinearConv", U8, I8, "scalar", "channel",
     dict(kernel_shape=[3, 3], pads=[2, 1, 0, 1], strides=[1, 2], dilations=[2, 1], bias=True)),
    ("qlinearconv__bias__same_upper_group2", "QLinearConv", U8, U8, "scalar", "scalar",
     dict(auto_pad="SAME_UPPER", strides=[2, 2], group=2, bias=True)),
    ("qlinearconv__same_lower__w_channel", "QLinearConv", U8, I8, "scalar", "channel",
     dict(auto_pad="SAME_LOWER", strides=[3, 2])),
    ("qlinearconv__int8__bias__valid", "QLinearConv", I8, I8, "scalar", "scalar",
     dict(auto_pad="VALID", strides=[2, 1], bias=True)),
]
QCONV_X = (1, 4, 7, 8)


def build_quant_conv_modes(case, rng, H):
    """ConvInteger and QLinearConv: zero points absent / per tensor / per output channel, every
    window attribute and auto_pad value, QLinearConv's int32 bias. The integer inputs are float
    graph inputs cast in the graph. Reference: the convolution of x - x_zero_point and
    w - w_zero_point (padding adds zeros there, i.e. x's zero point, as onnx's
    test_convinteger_with_padding expects) in float64 by torch, cross-checked by
    export_test_models.py's numpy Conv; QLinearConv then adds B and requantizes:
    saturate(round(acc * x_scale * w_scale / y_scale) + y_zero_point)."""
    g = _Graph()
    M = 6
    for name, op, xt, wt, xzp, wzp, attrs in QCONV_VARIANTS:
        attrs = dict(attrs)
        bias = attrs.pop("bias", False)
        group = attrs.get("group", 1)
        xz = None if xzp is None else _ints(rng, (), xt, *((100, 150) if xt == U8 else (-20, 20)))
        wz = None if wzp is None else _ints(rng, () if wzp == "scalar" else (M,), wt,
                                            *((100, 150) if wt == U8 else (-10, 10)))
        kh, kw = attrs.get("kernel_shape", [3, 3])
        wshape = (M, QCONV_X[1] // group, kh, kw)
        if op == "ConvInteger":   # int32 sums below 10^4: the 1e-4 relative tolerance is then exact
            x, w = _around(rng, QCONV_X, xt, xz, 12), _around(rng, wshape, wt, wz, 10)
        else:                     # requantized to 8 bits: any range compares exactly
            x, w = _ints(rng, QCONV_X, xt), _ints(rng, wshape, wt)
        x = x.astype(np.int64)
        xc = x - (0 if xz is None else int(xz))
        wc = w.astype(np.int64) - (0 if wz is None else wz.astype(np.int64).reshape(-1, 1, 1, 1))
        strides, dil = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
        pads = spec_pads(attrs.get("auto_pad", "NOTSET"), x.shape[2:], w.shape[2:], strides, dil, attrs.get("pads"))
        acc = torch_conv(xc, wc, None, pads, strides, dil, group)
        _check_agree(name, H.np_conv(xc.astype(np.float64), wc.astype(np.float64), None, dict(attrs)), acc)
        acc = np.rint(acc).astype(np.int64)
        ins = [g.cast_input(name + "_x", x, xt)]
        if op == "ConvInteger":
            ins += [g.const(name + "_w", w), g.const(name + "_x_zero_point", xz) if xz is not None else "",
                    g.const(name + "_w_zero_point", wz) if wz is not None else ""]
            while ins[-1] == "":
                ins.pop()
            g.nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
            g.output(name, acc.astype(np.int32), I32)
            continue
        # Scales drawn at random (no exact ties in acc * scale), y_scale so that about a third
        # of the range is used each side of the zero point.
        x_scale = np.float32(rng.uniform(0.02, 0.05))
        w_scale = (np.float32(rng.uniform(0.005, 0.02)) if wzp == "scalar"
                   else rng.uniform(0.005, 0.02, (M,)).astype(np.float32))
        b = rng.integers(-3000, 3000, (M,)).astype(np.int32) if bias else np.zeros(M, np.int32)
        acc = acc + b.reshape(1, -1, 1, 1)
        real = acc * float(x_scale) * w_scale.astype(np.float64).reshape(-1, 1, 1)
        y_scale = np.float32(np.abs(real).max() / 90.0)
        yz = _ints(rng, (), xt, *((110, 140) if xt == U8 else (-10, 10)))
        ins += [g.const(name + "_x_scale", np.array(x_scale)), g.const(name + "_x_zero_point", xz),
                g.const(name + "_w", w), g.const(name + "_w_scale", np.asarray(w_scale)),
                g.const(name + "_w_zero_point", wz), g.const(name + "_y_scale", np.array(y_scale)),
                g.const(name + "_y_zero_point", yz)] + ([g.const(name + "_B", b)] if bias else [])
        g.nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        g.output(name, _requantize(real / float(y_scale), int(yz), xt, name), xt)
    return g.build(H, case.opset)


def build_quant_linear_modes(case, rng, H):
    """QuantizeLinear / DequantizeLinear with a given axis (0, negative, inner) and without zero
    point (uint8 output, zero point 0), DequantizeLinear of int32; MatMulInteger without one or
    both zero points, per tensor, per row of A, per column of B. References: the spec formulas in
    float64 (y = saturate(round(x / y_scale) + y_zero_point), y = (x - x_zero_point) * x_scale);
    MatMulInteger also torch.matmul of the centered operands."""
    g = _Graph()
    shape = (2, 3, 4, 5)
    x = H.randn(rng, shape, 2.0)
    xn = g.input("X", x)
    for name, axis, scale_shape, zp in (("quantizelinear__axis0__uint8", 0, (2,), U8),
                                        ("quantizelinear__axis_m1__int8", -1, (5,), I8),
                                        ("quantizelinear__axis2__no_zero_point", 2, (4,), None),
                                        ("quantizelinear__per_tensor__no_zero_point", None, (), None)):
        sc = rng.uniform(0.008, 0.03, scale_shape).astype(np.float32)
        z = None if zp is None else _ints(rng, scale_shape, zp, *((100, 150) if zp == U8 else (-20, 20)))
        # without a zero point (uint8, 0) every negative saturates to 0: |X| instead
        xs, xs_name = (x, xn) if zp is not None else (np.abs(x), g.input("X_abs", np.abs(x)))
        ins = [xs_name, g.const(name + "_scale", sc)] + ([g.const(name + "_zero_point", z)] if z is not None else [])
        attrs = {} if axis is None else dict(axis=axis)
        g.nodes.append(helper.make_node("QuantizeLinear", ins, [name], name=name, **attrs))
        bshape = [1] * 4
        if sc.ndim:
            bshape[axis % 4] = sc.size
        zz = 0 if z is None else z.astype(np.int64).reshape(bshape)
        g.output(name, _requantize(xs.astype(np.float64) / sc.astype(np.float64).reshape(bshape), zz, zp or U8, name),
                 zp or U8)
    for name, xt, axis, scale_shape, has_zp in (("dequantizelinear__axis0", U8, 0, (2,), True),
                                                ("dequantizelinear__axis_m2__int8__no_zero_point", I8, -2, (4,), False),
                                                ("dequantizelinear__axis3__int8", I8, 3, (5,), True),
                                                ("dequantizelinear__per_tensor__no_zero_point", U8, None, (), False),
                                                ("dequantizelinear__int32__no_zero_point", I32, 1, (3,), False)):
        # int32: |y| below 10, so that the tolerance (1e-4 of it) is below one step of the scale
        q = (rng.integers(-3000, 3001, shape) if xt == I32 else _ints(rng, shape, xt)).astype(np.int64)
        sc = rng.uniform(*((0.001, 0.003) if xt == I32 else (0.01, 0.1)), scale_shape).astype(np.float32)
        z = _ints(rng, scale_shape, xt, *((100, 150) if xt == U8 else (-20, 20))) if has_zp else None
        ins = [g.cast_input(name + "_x", q, xt), g.const(name + "_scale", sc)]
        if z is not None:
            ins.append(g.const(name + "_zero_point", z))
        g.nodes.append(helper.make_node("DequantizeLinear", ins, [name], name=name,
                                        **({} if axis is None else dict(axis=axis))))
        bshape = [1] * 4
        if sc.ndim:
            bshape[axis % 4] = sc.size
        zz = 0 if z is None else z.astype(np.int64).reshape(bshape)
        g.output(name, (q - zz) * sc.astype(np.float64).reshape(bshape))
    # MatMulInteger: A [3, 4, 5] (a_zero_point per tensor) or [4, 5] (per row), B [5, 6].
    # Operands within a few dozen of their zero points: int32 results below 10^4 compare exactly.
    for name, ashape, at, bt, azp, bzp in (
            ("matmulinteger__no_zero_points", (3, 4, 5), U8, U8, None, None),
            ("matmulinteger__a_zero_point_only", (3, 4, 5), U8, U8, "scalar", None),
            ("matmulinteger__b_zero_point_per_column_only", (3, 4, 5), U8, I8, None, "column"),
            ("matmulinteger__int8__a_zero_point_per_row_only", (4, 5), I8, U8, "row", None)):
        az = None if azp is None else _ints(rng, () if azp == "scalar" else (ashape[-2],), at,
                                            *((100, 150) if at == U8 else (-20, 20)))
        bz = None if bzp is None else _ints(rng, (6,), bt, *((100, 150) if bt == U8 else (-20, 20)))
        a = _around(rng, ashape, at, None, 40).astype(np.int64)
        if az is not None:   # per row: the zero point of row m (axis -2)
            a = np.clip(a - 20 + (az.astype(np.int64).reshape(-1, 1) if az.ndim else int(az)), *RANGE[at])
        bmat = _around(rng, (6, 5), bt, bz, 25).T.astype(np.int64)   # columns around bz
        ins = [g.cast_input(name + "_A", a, at),
               g.const(name + "_B", bmat.astype(NP_TYPE[bt])),
               g.const(name + "_a_zero_point", az) if az is not None else "",
               g.const(name + "_b_zero_point", bz) if bz is not None else ""]
        while ins[-1] == "":
            ins.pop()
        g.nodes.append(helper.make_node("MatMulInteger", ins, [name], name=name))
        ac = a - (0 if az is None else (az.astype(np.int64) if azp == "scalar" else az.astype(np.int64).reshape(-1, 1)))
        bc = bmat - (0 if bz is None else bz.astype(np.int64).reshape(1, -1))
        ref = ac @ bc
        with torch.no_grad():
            theirs = torch.matmul(torch.from_numpy(ac.astype(np.float64)), torch.from_numpy(bc.astype(np.float64)))
        _check_agree(name, ref.astype(np.float64), theirs.numpy())
        g.output(name, ref.astype(np.int32), I32)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Normalization: LayerNormalization without B / with stash_type, MeanVarianceNormalization axes
# --------------------------------------------------------------------------------------------

def build_norm_modes(case, rng, H):
    """LayerNormalization-17 (Y = (X - mean) / sqrt(var + epsilon) * Scale + B over the axes from
    `axis` on; Mean and InvStdDev outputs) without B, and with stash_type=1 given (float32, the
    default): torch's F.layer_norm, Mean and InvStdDev from numpy. MeanVarianceNormalization with
    axes given: (X - mean) / (sqrt(mean((X - mean)^2)) + 1e-9) over `axes` (onnx's test_mvn
    formula), torch's mean / var cross-checked."""
    g = _Graph()
    x = (H.randn(rng, (2, 3, 4, 5)) * 1.5 + 0.5).astype(np.float32)
    xn = g.input("X", x)
    for name, axis, bias, attrs in (("layernorm__no_bias__axis_m1", -1, False, {}),
                                    ("layernorm__no_bias__axis1__stash_type1__eps", 1, False,
                                     dict(stash_type=1, epsilon=1e-2)),
                                    ("layernorm__bias__axis_m2__stash_type1", -2, True, dict(stash_type=1))):
        shape = x.shape[axis:]
        scale = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        b = H.randn(rng, shape, 0.3) if bias else None
        outs = [name + "_Y", name + "_Mean", name + "_InvStdDev"]
        ins = [xn, g.const(name + "_Scale", scale)] + ([g.const(name + "_B", b)] if bias else [])
        g.nodes.append(helper.make_node("LayerNormalization", ins, outs, name=name, axis=axis, **attrs))
        eps = attrs.get("epsilon", 1e-5)
        axes = tuple(range(axis % x.ndim, x.ndim))
        x64 = x.astype(np.float64)
        mean = x64.mean(axes, keepdims=True)
        inv_std = 1.0 / np.sqrt(((x64 - mean) ** 2).mean(axes, keepdims=True) + eps)
        ours = (x64 - mean) * inv_std * scale + (0.0 if b is None else b)
        with torch.no_grad():
            y = F.layer_norm(torch.from_numpy(x64), shape, torch.from_numpy(scale.astype(np.float64)),
                             None if b is None else torch.from_numpy(b.astype(np.float64)), eps).numpy()
        _check_agree(name, ours, y)
        for o, ref in zip(outs, (y, mean, inv_std)):
            g.output(o, ref)
    for name, axes in (("mvn__axes_2_3", [2, 3]), ("mvn__axes1", [1]), ("mvn__axes_1_2_3", [1, 2, 3]),
                       ("mvn__axes_0_1", [0, 1])):
        g.nodes.append(helper.make_node("MeanVarianceNormalization", [xn], [name], name=name, axes=axes))
        x64 = x.astype(np.float64)
        mean = x64.mean(tuple(axes), keepdims=True)
        ours = (x64 - mean) / (np.sqrt(((x64 - mean) ** 2).mean(tuple(axes), keepdims=True)) + 1e-9)
        with torch.no_grad():
            t = torch.from_numpy(x64)
            y = ((t - t.mean(axes, keepdim=True)) / torch.sqrt(t.var(axes, unbiased=False, keepdim=True))).numpy()
        _check_agree(name, ours, y)
        g.output(name, y)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Attribute defaults and value forms of other operators (opset 17)
# --------------------------------------------------------------------------------------------

def build_attr_defaults(case, rng, H):
    """Operators whose tested nodes always set an attribute: TopK without axis (the last) and with
    sorted=0 (K=1: one order), GatherElements without axis (0), ScatterElements reduction=mul
    (repeated indices multiply in turn), Celu without alpha (1), Shrink without lambd (0.5),
    Dropout-13 without seed, Constant's value_float(s) / value_int(s), ConstantOfShape without
    value (float32 zeros), Squeeze without axes, the window functions with output_datatype.
    References: torch where it has the function, else numpy from the spec."""
    g = _Graph()
    x = H.randn(rng, (3, 4, 6))
    xn = g.input("X", x)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        # TopK
        for name, k, attrs, dim in (("topk__axis_default", 3, {}, -1), ("topk__sorted0__k1__axis1", 1,
                                                                          dict(axis=1, sorted=0), 1)):
            g.nodes.append(helper.make_node("TopK", [xn, g.const(name + "_K", np.array([k], np.int64))],
                                            [name + "_values", name + "_indices"], name=name, **attrs))
            v, i = torch.topk(xt, k, dim=dim)
            g.output(name + "_values", v.numpy())
            g.output(name + "_indices", i.numpy(), I64)
        # GatherElements without axis: axis 0, negative indices counting from the end
        idx = rng.integers(-3, 3, (2, 4, 6)).astype(np.int64)
        name = "gatherelements__axis_default"
        g.nodes.append(helper.make_node("GatherElements", [xn, g.const(name + "_indices", idx)], [name], name=name))
        ours = np.take_along_axis(x, idx % 3, axis=0)
        ref = torch.gather(xt, 0, torch.from_numpy(idx % 3)).numpy()
        _check_agree(name, ours.astype(np.float64), ref)
        g.output(name, ref)
        # ScatterElements reduction=mul: output = data; output[idx[i][j][k]][j][k] *= updates[i][j][k]
        name = "scatterelements__reduction_mul__axis0"
        upd = H.randn(rng, (4, 4, 6))
        sidx = rng.integers(0, 3, (4, 4, 6)).astype(np.int64)
        g.nodes.append(helper.make_node("ScatterElements", [xn, g.const(name + "_indices", sidx),
                                                            g.input(name + "_updates", upd)],
                                        [name], name=name, axis=0, reduction="mul"))
        ours = _np_scatter_elements(x, sidx, upd, 0, "mul")
        ref = xt.scatter_reduce(0, torch.from_numpy(sidx), torch.from_numpy(upd), "prod", include_self=True).numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref)
        # Celu without alpha, Shrink without lambd (bias 0.5: torch's softshrink)
        name = "celu__alpha_default"
        g.nodes.append(helper.make_node("Celu", [xn], [name], name=name))
        g.output(name, torch.celu(xt, 1.0).numpy())
        name = "shrink__lambd_default__bias0_5"
        g.nodes.append(helper.make_node("Shrink", [xn], [name], name=name, bias=0.5))
        ours = np.where(x < -0.5, x + 0.5, np.where(x > 0.5, x - 0.5, 0.0))
        ref = F.softshrink(xt, 0.5).numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref)
    # Dropout-13 without seed (nor ratio / training_mode): the identity at inference
    name = "dropout__seed_default"
    g.nodes.append(helper.make_node("Dropout", [xn], [name], name=name))
    g.output(name, x)
    # Constant's other value attributes, each read by the op it suits
    vals = rng.uniform(0.5, 1.5, 6).astype(np.float32)
    for name, cattr, op, extra, ref in (
            ("constant__value_float", dict(value_float=0.75), "Add", {}, x + np.float32(0.75)),
            ("constant__value_floats", dict(value_floats=vals.tolist()), "Mul", {}, x * vals),
            ("constant__value_ints", dict(value_ints=[4, -1, 2]), "Reshape", {}, x.reshape(4, -1, 2)),
            ("constant__value_int", dict(value_int=-2), "Gather", dict(axis=1), x[:, -2])):
        g.nodes.append(helper.make_node("Constant", [], [name + "_c"], name=name + "_c", **cattr))
        g.nodes.append(helper.make_node(op, [xn, name + "_c"], [name], name=name, **extra))
        g.output(name, ref)
    # ConstantOfShape without value: float32 zeros (minus X: -X)
    name = "constantofshape__value_default"
    g.nodes.append(helper.make_node("ConstantOfShape", [g.const(name + "_shape", np.array(x.shape, np.int64))],
                                    [name + "_zeros"], name=name + "_zeros"))
    g.nodes.append(helper.make_node("Sub", [name + "_zeros", xn], [name], name=name))
    g.output(name, -x)
    # Squeeze without axes: every dimension of size 1
    x1 = H.randn(rng, (1, 3, 1, 5, 1))
    name = "squeeze__axes_absent"
    g.nodes.append(helper.make_node("Squeeze", [g.input("X_ones", x1)], [name], name=name))
    g.output(name, torch.from_numpy(x1).squeeze().numpy())
    # Windows with output_datatype: w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), N = size
    # (periodic) or size - 1; Hamming's a0 = 25/46, a1 = 21/46 (torch's alpha, beta).
    for name, op, size, periodic, dtype in (("hannwindow__output_datatype_double", "HannWindow", 10, 1,
                                             TensorProto.DOUBLE),
                                            ("hammingwindow__output_datatype_float__periodic0", "HammingWindow", 7, 0,
                                             TensorProto.FLOAT),
                                            ("blackmanwindow__output_datatype_double", "BlackmanWindow", 8, 1,
                                             TensorProto.DOUBLE)):
        g.nodes.append(helper.make_node(op, [g.const(name + "_size", np.array(size, np.int64))], [name], name=name,
                                        output_datatype=dtype, periodic=periodic))
        a0, a1, a2 = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25 / 46, 21 / 46, 0.0),
                      "BlackmanWindow": (0.42, 0.5, 0.08)}[op]
        k = np.arange(size)
        n = size if periodic else size - 1
        ours = a0 - a1 * np.cos(2 * np.pi * k / n) + a2 * np.cos(4 * np.pi * k / n)
        kw = dict(periodic=bool(periodic), dtype=torch.float64)
        ref = {"HannWindow": lambda: torch.hann_window(size, **kw),
               "HammingWindow": lambda: torch.hamming_window(size, alpha=25 / 46, beta=21 / 46, **kw),
               "BlackmanWindow": lambda: torch.blackman_window(size, **kw)}[op]().numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref, dtype)
    return g.build(H, case.opset)


def _np_scatter_elements(data, idx, upd, axis, reduction):
    """ScatterElements-16/18 from the spec: output = data, then for every index position p,
    output[p with p[axis] = idx[p]] = f(that, upd[p]) in order."""
    out = data.astype(np.float64).copy()
    f = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = idx[p]
        out[tuple(q)] = f(out[tuple(q)], upd[p])
    return out


def _np_scatter_nd(data, idx, upd, reduction):
    """ScatterND-16/18 from the spec: output = data, then output[idx[p]] = f(output[idx[p]], upd[p])
    for every p of idx.shape[:-1], in order."""
    out = data.astype(np.float64).copy()
    f = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
    for p in np.ndindex(*idx.shape[:-1]):
        q = tuple(idx[p])
        out[q] = f(out[q], upd[p])
    return out


def build_shape_modes_opset11(case, rng, H):
    """Squeeze / Unsqueeze with the axes attribute and Split with the split attribute (opsets
    11-12; inputs from 13)."""
    g = _Graph()
    x = H.randn(rng, (2, 1, 5, 1))
    xn = g.input("X", x)
    for name, op, attrs, ref in (("squeeze__axes_attr_1", "Squeeze", dict(axes=[1]), x[:, 0]),
                                 ("squeeze__axes_attr_m1_1", "Squeeze", dict(axes=[-1, 1]), x[:, 0, :, 0]),
                                 ("unsqueeze__axes_attr_0_m1", "Unsqueeze", dict(axes=[0, -1]), x[None, ..., None]),
                                 ("unsqueeze__axes_attr_2", "Unsqueeze", dict(axes=[2]), x[:, :, None])):
        g.nodes.append(helper.make_node(op, [xn], [name], name=name, **attrs))
        g.output(name, ref)
    for name, axis, split in (("split__split_attr_2_3__axis2", 2, [2, 3]),
                              ("split__split_attr_1_4__axis_m2", -2, [1, 4])):
        outs = ["%s_%d" % (name, k) for k in range(len(split))]
        g.nodes.append(helper.make_node("Split", [xn], outs, name=name, axis=axis, split=split))
        for o, part in zip(outs, torch.split(torch.from_numpy(x), split, dim=axis)):
            g.output(o, part.numpy())
    return g.build(H, case.opset)


def build_opset18_modes(case, rng, H):
    """Opset-18 forms: Split with num_outputs (even, and uneven: the last part smaller) and
    Split-18 with the split input (num_outputs absent); Pad-18 without axes; ScatterElements and
    ScatterND with reduction max / min (repeated indices); Resize-18 without antialias, axes and
    keep_aspect_ratio_policy (their defaults)."""
    g = _Graph()
    x = H.randn(rng, (2, 7, 6))
    xn = g.input("X", x)
    xt = torch.from_numpy(x)
    for name, axis, attrs, split, parts in (("split18__num_outputs3__uneven__axis1", 1, dict(num_outputs=3), None,
                                             [3, 3, 1]),
                                            ("split18__num_outputs2__axis_m1", -1, dict(num_outputs=2), None, [3, 3]),
                                            ("split18__split_input__num_outputs_default", 1, {}, [1, 4, 2], [1, 4, 2])):
        outs = ["%s_%d" % (name, k) for k in range(len(parts))]
        ins = [xn] + ([g.const(name + "_split", np.array(split, np.int64))] if split else [])
        g.nodes.append(helper.make_node("Split", ins, outs, name=name, axis=axis, **attrs))
        for o, part in zip(outs, torch.split(xt, parts, dim=axis)):
            g.output(o, part.numpy())
    for name, mode, pads, value in (("pad18__no_axes__constant", "constant", [0, 1, 2, 1, 0, 3], 0.5),
                                    ("pad18__no_axes__reflect", "reflect", [0, 2, 1, 0, 3, 2], None)):
        ins = [xn, g.const(name + "_pads", np.array(pads, np.int64))]
        if value is not None:
            ins.append(g.const(name + "_value", np.array(value, np.float32)))
        g.nodes.append(helper.make_node("Pad", ins, [name], name=name, mode=mode))
        r = x.ndim
        ours = np.pad(x, [(pads[i], pads[i + r]) for i in range(r)], mode=mode,
                      **(dict(constant_values=value) if mode == "constant" else {}))
        with torch.no_grad():   # torch pads the last axes only (reflect: not the first): N is not padded here
            ref = F.pad(xt[None] if mode == "reflect" else xt,
                        tuple(v for i in reversed(range(r)) for v in (pads[i], pads[i + r])),
                        mode=mode, **(dict(value=value) if mode == "constant" else {}))
            ref = (ref[0] if mode == "reflect" else ref).numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref)
    upd = H.randn(rng, (2, 9, 6), 1.5)
    un = g.input("updates", upd)
    sidx = rng.integers(-7, 7, (2, 9, 6)).astype(np.int64)   # 9 updates into 7 rows: repeats
    nidx = np.stack([rng.integers(0, 2, (2, 9)), rng.integers(0, 7, (2, 9))], -1).astype(np.int64)  # (batch, row)
    nidx[0, 1], nidx[1, 4] = nidx[0, 0], nidx[0, 0]          # one slice updated three times
    for red in ("max", "min"):
        name = "scatterelements18__reduction_%s__axis1" % red
        g.nodes.append(helper.make_node("ScatterElements", [xn, g.const("scatter_indices", sidx), un], [name],
                                        name=name, axis=1, reduction=red))
        ours = _np_scatter_elements(x, sidx, upd, 1, red)
        with torch.no_grad():
            ref = xt.scatter_reduce(1, torch.from_numpy(sidx % 7), torch.from_numpy(upd), "a" + red,
                                    include_self=True).numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref)
        name = "scatternd18__reduction_%s" % red
        g.nodes.append(helper.make_node("ScatterND", [xn, g.const("scatternd_indices", nidx), un], [name],
                                        name=name, reduction=red))
        ours = _np_scatter_nd(x, nidx, upd, red)
        with torch.no_grad():   # index_reduce over the flattened (batch, row) axis
            flat = nidx[..., 0] * 7 + nidx[..., 1]
            ref = xt.reshape(14, 6).index_reduce(0, torch.from_numpy(flat.reshape(-1)),
                                                 torch.from_numpy(upd.reshape(-1, 6)), "a" + red,
                                                 include_self=True).reshape(2, 7, 6).numpy()
        _check_agree(name, ours, ref)
        g.output(name, ref)
    # Resize-18 without its new attributes (the opset-13 behaviour)
    xin = _resize_inputs(g, H, rng)
    _resize_node(g, "resize18__linear__half_pixel__sizes", *xin["sizes"], case.opset, "linear", "half_pixel",
                 **_by("sizes"))
    _resize_node(g, "resize18__nearest__asymmetric__floor__scales", *xin["scales"], case.opset, "nearest",
                 "asymmetric", nearest_mode="floor", **_by("scales"))
    return g.build(H, case.opset)


def build_upsample_linear(case, rng, H):
    """Upsample-9 mode=linear: Resize's asymmetric linear (x_in = x_out / scale, the two nearest
    inputs, the edge repeated past the end), numpy from the spec, cross-checked by onnx's own
    backend-test interpolation (onnx/backend/test/case/node/resize.py)."""
    from onnx.backend.test.case.node.resize import interpolate_nd, linear_coeffs
    g = _Graph()
    x = H.randn(rng, (1, 2, 3, 4))
    xn = g.input("X", x)
    for name, scales in (("upsample__linear__scales_2_1_5", [1.0, 1.0, 2.0, 1.5]),
                         ("upsample__linear__scales_1_5_3", [1.0, 1.0, 1.5, 3.0])):
        sc = np.array(scales, np.float32)
        g.nodes.append(helper.make_node("Upsample", [xn, g.const(name + "_scales", sc)], [name], name=name,
                                        mode="linear"))
        ours = np_resize(x, "linear", "asymmetric", scales=sc)
        theirs = interpolate_nd(x.astype(np.float64), linear_coeffs, scale_factors=sc.astype(np.float64),
                                coordinate_transformation_mode="asymmetric")
        _check_agree(name, ours, theirs)
        g.output(name, ours)
    return g.build(H, case.opset)


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------

def register_all(register, helper_module):
    """Registers this module's cases with export_test_models.py's `register`; helper_module is
    that script (make_helper_model, randn, make_torch_case)."""
    H = helper_module

    def reg(name, build, opset):
        register(name, lambda case, rng: build(case, rng, H), "onnx.helper", opset=opset, verify=False)

    def reg18(name, build):
        # onnx 1.12's checker knows opsets up to 17 and refuses every opset-18 node: not checked.
        register(name, lambda case, rng: build(case, rng, H), "onnx.helper", opset=18, verify=False, check=False)

    reg("rnn_modes_gru", build_recurrent("GRU", GRU_VARIANTS), 14)
    reg("rnn_modes_lstm", build_recurrent("LSTM", LSTM_VARIANTS), 14)
    reg("rnn_modes_rnn", build_recurrent("RNN", RNN_VARIANTS), 14)
    H.make_torch_case("rnn_torch_export", TorchRecurrent,
                      [H.shaped((BATCH, SEQ, IN)), H.shaped((2, BATCH, HID), 0.5), H.shaped((2, BATCH, HID), 0.5)],
                      opset=14, init=False, verify=False)
    reg("resize_modes_nearest", build_resize_nearest, 13)
    reg("resize_modes_linear_cubic", build_resize_linear_cubic, 13)
    reg("resize_modes_crop", build_resize_crop, 13)
    reg("resize_modes_opset11", build_resize_opset11, 11)
    # two halves: each distinct reduction is its own kernel, and one model of all 74 compiles slowly
    half = len(REDUCE_OPS) // 2
    reg("reduce_modes_opset13", lambda c, r, h: build_reduce_opset13(c, r, h, REDUCE_OPS[:half]), 13)
    reg("reduce_modes_opset13_l1_l2_log", lambda c, r, h: build_reduce_opset13(c, r, h, REDUCE_OPS[half:]), 13)
    reg("reduce_sum_opset12", build_reduce_sum_opset12, 12)
    reg18("reduce_modes_opset18", lambda c, r, h: build_reduce_opset18(c, r, h, REDUCE18_OPS[:4]))
    reg18("reduce_modes_opset18_l1_l2_log", lambda c, r, h: build_reduce_opset18(c, r, h, REDUCE18_OPS[4:]))
    reg("window_modes", build_window_modes, 13)
    reg("conv_transpose_modes", build_conv_transpose_modes, 13)
    reg("quant_conv_modes", build_quant_conv_modes, 13)
    reg("quant_linear_modes", build_quant_linear_modes, 13)
    reg("norm_modes", build_norm_modes, 17)
    reg("attr_defaults_opset17", build_attr_defaults, 17)
    reg("shape_modes_opset11", build_shape_modes_opset11, 11)
    reg18("opset18_modes", build_opset18_modes)
    reg("upsample_linear_opset9", build_upsample_linear, 9)
