"""The PyTorch calls from_torch maps onto Loom's operators: one handler per module type, function
or tensor method. A handler reads its arguments through the Converter (torch_fx.py) and returns
the Loom id of the node's value (a tuple of ids for calls that return several tensors).

Shapes are static: a call that only moves elements (flatten, view, reshape, squeeze, unsqueeze,
expand) becomes a Loom reshape or expand to the shape PyTorch's value has.
"""
import math
import operator

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


def _axis(d, rank):
    d = int(d)
    return d + rank if d < 0 else d


# ---------------------------------------------------------------------------------------------
# Element-wise
# ---------------------------------------------------------------------------------------------

def _unary(op, attrs=None):
    def handle(cv, args, kwargs):
        return cv.add(op, [cv.tensor(args[0])], attrs)
    return handle


def _binary(op, reverse=False):
    def handle(cv, args, kwargs):
        a, b = args[0], _arg(args, kwargs, 1, "other")
        if not cv.is_dynamic(a) and cv.is_dynamic(b):  # a scalar or constant on the left
            ib = cv.tensor(b)
            ia = cv.tensor(a, like=ib)
        else:
            ia = cv.tensor(a)
            ib = cv.tensor(b, like=ia)
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            ib = cv.add("mul", [ib, cv.scalar(alpha, ib, "_alpha")], suffix="_alpha_b")
        if kwargs.get("rounding_mode") is not None:
            cv.fail("division with a rounding_mode is not mapped")
        return cv.add(op, [ib, ia] if reverse else [ia, ib])
    return handle


def _not_equal(cv, args, kwargs):
    eq = _binary("equal")(cv, args, kwargs)
    return cv.add("logical_not", [eq], suffix="_not")


def _where(cv, args, kwargs):
    cond, a, b = args[0], _arg(args, kwargs, 1, "input"), _arg(args, kwargs, 2, "other")
    ia = cv.tensor(a) if cv.is_dynamic(a) or not cv.is_dynamic(b) else None
    ib = cv.tensor(b, like=ia)
    if ia is None:
        ia = cv.tensor(a, like=ib)
    return cv.add("where", [cv.tensor(cond), ia, ib])


def _relu6(cv, args, kwargs):
    return cv.add("clip", [cv.tensor(args[0])], {"min": 0.0, "max": 6.0})


def _hardtanh(lo, hi):
    def handle(cv, args, kwargs):
        return cv.add("clip", [cv.tensor(args[0])], {"min": float(lo), "max": float(hi)})
    return handle


def _silu(cv, args, kwargs):
    x = cv.tensor(args[0])
    return cv.add("mul", [x, cv.add("sigmoid", [x], suffix="_sigmoid")])


def _gelu_approx(cv, x, approximate):
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = cv.add("mul", [cv.add("mul", [x, x], suffix="_sq"), x], suffix="_cube")
        inner = cv.add("add", [x, cv.add("mul", [cube, cv.scalar(0.044715, x, "_c")], suffix="_c3")], suffix="_in")
        t = cv.add("tanh", [cv.add("mul", [inner, cv.scalar(math.sqrt(2 / math.pi), x, "_k")], suffix="_arg")],
                   suffix="_tanh")
    elif approximate == "none":  # 0.5 x (1 + erf(x / sqrt 2))
        t = cv.add("erf", [cv.add("div", [x, cv.scalar(math.sqrt(2.0), x, "_sqrt2")], suffix="_scaled")],
                   suffix="_erf")
    else:
        cv.fail(f"GELU approximation {approximate!r} is not one of 'none', 'tanh'")
    half = cv.add("mul", [x, cv.scalar(0.5, x, "_half")], suffix="_halfx")
    return cv.add("mul", [half, cv.add("add", [t, cv.scalar(1.0, x, "_one")], suffix="_1p")])


def _gelu(cv, args, kwargs):
    return _gelu_approx(cv, cv.tensor(args[0]), kwargs.get("approximate", "none"))


def _gelu_module(cv, args, kwargs):
    return _gelu_approx(cv, cv.tensor(args[0]), cv.module.approximate)


def _softmax_axis(cv, x, dim, log=False):
    if dim is None:
        cv.fail("softmax without dim is not mapped (PyTorch picks one implicitly)")
    axis = _axis(dim, len(cv.shape(x)))
    if log:
        lse = cv.add("reduce_log_sum_exp", [x], {"axes": [axis], "keepdims": 1}, "_lse")
        return cv.add("sub", [x, lse])
    return cv.add("softmax", [x], {"axis": axis})


def _softmax(log):
    def handle(cv, args, kwargs):
        return _softmax_axis(cv, cv.tensor(args[0]), _arg(args, kwargs, 1, "dim"), log)
    return handle


def _softmax_module(log):
    def handle(cv, args, kwargs):
        return _softmax_axis(cv, cv.tensor(args[0]), cv.module.dim, log)
    return handle


def _identity(cv, args, kwargs):
    return cv.tensor(args[0])


def _leaky_relu_module(cv, args, kwargs):
    return cv.add("leaky_relu", [cv.tensor(args[0])], {"alpha": float(cv.module.negative_slope)})


def _leaky_relu(cv, args, kwargs):
    return cv.add("leaky_relu", [cv.tensor(args[0])], {"alpha": float(_arg(args, kwargs, 1, "negative_slope", 0.01))})


def _elu_module(cv, args, kwargs):
    return cv.add("elu", [cv.tensor(args[0])], {"alpha": float(cv.module.alpha)})


# ---------------------------------------------------------------------------------------------
# Layers with weights
# ---------------------------------------------------------------------------------------------

def _conv2d(cv, x, weight, bias, stride, padding, dilation, groups):
    kh, kw = weight.shape[2], weight.shape[3]
    stride, dilation = _pair(stride), _pair(dilation)
    if isinstance(padding, str):
        if padding == "valid":
            pads = [0, 0, 0, 0]
        elif padding == "same":  # PyTorch puts the odd pixel at the end
            total = [dilation[0] * (kh - 1), dilation[1] * (kw - 1)]
            pads = [total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2]
        else:
            cv.fail(f"padding {padding!r} is not one of 'same', 'valid' or numbers")
    else:
        p = _pair(padding)
        pads = [p[0], p[1], p[0], p[1]]
    inputs = [x, cv.const(weight, "_weight")]
    if bias is not None:
        inputs.append(cv.const(bias, "_bias"))
    return cv.add("conv2d", inputs, {"strides": stride, "pads": pads, "dilations": dilation, "groups": int(groups)})


def _conv2d_module(cv, args, kwargs):
    m = cv.module
    if m.padding_mode != "zeros":
        cv.fail(f"padding_mode {m.padding_mode!r} is not mapped (only 'zeros')")
    return _conv2d(cv, cv.tensor(args[0]), m.weight, m.bias, m.stride, m.padding, m.dilation, m.groups)


def _conv2d_function(cv, args, kwargs):
    w = _arg(args, kwargs, 1, "weight")
    if cv.is_dynamic(w):
        cv.fail("convolution weights computed from the inputs are not mapped (weights are constants)")
    b = _arg(args, kwargs, 2, "bias")
    if cv.is_dynamic(b):
        cv.fail("a convolution bias computed from the inputs is not mapped (biases are constants)")
    return _conv2d(cv, cv.tensor(args[0]), cv.value(w), cv.value(b) if b is not None else None,
                   cv.value(_arg(args, kwargs, 3, "stride", 1)), cv.value(_arg(args, kwargs, 4, "padding", 0)),
                   cv.value(_arg(args, kwargs, 5, "dilation", 1)), cv.value(_arg(args, kwargs, 6, "groups", 1)))


def _conv_transpose2d_module(cv, args, kwargs):
    """nn.ConvTranspose2d as a convolution: the input spread out by the stride (zeros between its
    elements), the kernel's input and output channels swapped per group and flipped, the padding
    turned around (crops where it would be negative)."""
    m = cv.module
    if m.padding_mode != "zeros":
        cv.fail(f"padding_mode {m.padding_mode!r} is not mapped (only 'zeros')")
    x = cv.tensor(args[0])
    n, c, h, w = cv.shape(x)
    sh, sw = _pair(m.stride)
    ph, pw = _pair(m.padding)
    oh, ow = _pair(m.output_padding)
    dh, dw = _pair(m.dilation)
    g = m.groups
    kh, kw = m.weight.shape[2], m.weight.shape[3]
    if sh > 1 or sw > 1:
        spread = cv.add("reshape", [x], {"shape": [n, c, h, 1, w, 1]}, "_spread")
        pads = [0] * 12
        pads[6 + 3], pads[6 + 5] = sh - 1, sw - 1
        zeros = cv.add("pad", [spread], {"pads": pads, "mode": "constant", "value": 0.0}, "_zeros")
        flat = cv.add("reshape", [zeros], {"shape": [n, c, h * sh, w * sw]}, "_dilated")
        x = cv.add("slice", [flat], {"starts": [0, 0], "ends": [(h - 1) * sh + 1, (w - 1) * sw + 1], "axes": [2, 3],
                                     "steps": [1, 1]}, "_upsampled")
    with torch.no_grad():  # [Cin, Cout/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped
        wt = m.weight.reshape(g, c // g, m.out_channels // g, kh, kw).transpose(1, 2)
        wt = wt.reshape(m.out_channels, c // g, kh, kw).flip([2, 3]).contiguous()
    before = [dh * (kh - 1) - ph, dw * (kw - 1) - pw]
    after = [dh * (kh - 1) - ph + oh, dw * (kw - 1) - pw + ow]
    inputs = [x, cv.const(wt, "_weight")]
    if m.bias is not None:
        inputs.append(cv.const(m.bias, "_bias"))
    y = cv.add("conv2d", inputs, {"strides": [1, 1], "dilations": [dh, dw], "groups": int(g),
                                  "pads": [max(before[0], 0), max(before[1], 0), max(after[0], 0), max(after[1], 0)]},
               "_conv")
    crop = [max(-before[0], 0), max(-before[1], 0), max(-after[0], 0), max(-after[1], 0)]
    if any(crop):
        _, _, yh, yw = cv.shape(y)
        y = cv.add("slice", [y], {"starts": [crop[0], crop[1]], "ends": [yh - crop[2], yw - crop[3]], "axes": [2, 3],
                                  "steps": [1, 1]}, "_crop")
    return cv.add("reshape", [y], {"shape": list(cv.out_shape)})


def _whole_factors(cv, x):
    """Nearest-neighbour upsampling of NCHW data by whole factors (output (i, j) reads input
    (i // s, j // s)): each element repeated along new axes, then folded back."""
    n, c, h, w = cv.shape(x)
    out = cv.out_shape
    sh, sw = out[2] // h, out[3] // w
    spread = cv.add("reshape", [x], {"shape": [n, c, h, 1, w, 1]}, "_spread")
    copies = cv.add("expand", [spread], {"shape": [n, c, h, sh, w, sw]}, "_copies")
    return cv.add("reshape", [copies], {"shape": list(out)})


_LINEAR_MODES = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


def _interpolation(cv, x, mode, align_corners, scale_factor, recompute_scale_factor, antialias=False):
    """F.interpolate / nn.Upsample on the spatial axes (all but N and C) to the traced output's size.
    'nearest' and 'nearest-exact' read the input PyTorch's way (its float32 index arithmetic), by
    whole factors through repeats and otherwise through a gather per axis; the linear modes and
    'bicubic' are Resize's linear and cubic taps (Graph.add_resize) with PyTorch's coordinates: the
    given scale factor unless it is recomputed from the sizes, half-pixel centres or aligned corners,
    Keys' a = -0.75."""
    if antialias:
        cv.fail("antialiased interpolation is not mapped")
    shape, out = list(cv.shape(x)), list(cv.out_shape)
    spatial = len(shape) - 2
    if spatial < 1 or len(out) != len(shape) or out[:2] != shape[:2]:
        cv.fail(f"interpolation from {shape} to {out} does not keep batch and channels")
    if isinstance(scale_factor, (list, tuple)):
        factors = [float(f) for f in scale_factor]
    else:
        factors = [float(scale_factor)] * spatial if scale_factor is not None else None
    if factors is not None and len(factors) != spatial:
        cv.fail(f"{len(factors)} scale factors for {spatial} spatial axes")
    if recompute_scale_factor:
        factors = None
    if mode in ("nearest", "nearest-exact"):
        if align_corners:
            cv.fail("align_corners applies to the linear and cubic modes only")
        indices = []
        for d in range(spatial):
            n_in, n_out = shape[d + 2], out[d + 2]
            # PyTorch's nearest_idx: a float32 scale, floor((o [+ 0.5]) * scale), clamped
            scale = np.float32(1.0 / factors[d]) if factors is not None else np.float32(n_in) / np.float32(n_out)
            o = np.arange(n_out, dtype=np.float32) + np.float32(0.5 if mode == "nearest-exact" else 0.0)
            indices.append(np.minimum(np.floor(o * scale).astype(np.int64), n_in - 1))
        if len(shape) == 4 and all(o % i == 0 and np.array_equal(ix, np.arange(o) // (o // i))
                                   for ix, o, i in zip(indices, out[2:], shape[2:])):
            return _whole_factors(cv, x)  # every element repeated: no gather
        for d, index in enumerate(indices):
            if shape[d + 2] != out[d + 2] or not np.array_equal(index, np.arange(out[d + 2])):
                x = cv.add("gather", [x, cv.const(index.astype(np.int32), f"_index{d + 2}")], {"axis": d + 2},
                           f"_axis{d + 2}")
        return x
    if mode not in _LINEAR_MODES:
        cv.fail(f"interpolation mode {mode!r} is not mapped (nearest, nearest-exact, linear, bilinear, trilinear, "
                "bicubic)")
    if _LINEAR_MODES[mode] != len(shape):
        cv.fail(f"mode {mode!r} takes {_LINEAR_MODES[mode]}-D input, not {len(shape)}-D")
    scales = [1.0, 1.0] + (factors if factors is not None and not align_corners else
                           [o / i for o, i in zip(out[2:], shape[2:])])
    return cv.graph.add_resize(x, out, scales=scales, mode="cubic" if mode == "bicubic" else "linear",
                               coordinate_transformation_mode="align_corners" if align_corners else "half_pixel",
                               cubic_coeff_a=-0.75, name=cv._name(cv.node.name))


def _interpolate(cv, args, kwargs):
    names = ["input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias"]
    a = dict(zip(names, args))
    a.update(kwargs)
    return _interpolation(cv, cv.tensor(a["input"]), cv.value(a.get("mode", "nearest")),
                          cv.value(a.get("align_corners")), cv.value(a.get("scale_factor")),
                          cv.value(a.get("recompute_scale_factor")), cv.value(a.get("antialias", False)))


def _upsample_module(cv, args, kwargs):
    m = cv.module
    return _interpolation(cv, cv.tensor(args[0]), m.mode, m.align_corners, m.scale_factor,
                          getattr(m, "recompute_scale_factor", None))


def _dense(cv, x, weight, bias, suffix=""):
    """x @ weight.T + bias over the last axis of x of any rank (Loom's dense takes 2-D data)."""
    shape = list(cv.shape(x))
    k, n = shape[-1], weight.shape[0]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    flat = x if len(shape) == 2 else cv.add("reshape", [x], {"shape": [rows, k]}, suffix + "_2d")
    inputs = [flat, cv.const(weight, suffix + "_weight")]
    if bias is not None:
        inputs.append(cv.const(bias, suffix + "_bias"))
    y = cv.add("dense", inputs, suffix=suffix + ("_dense" if len(shape) != 2 else ""))
    return y if len(shape) == 2 else cv.add("reshape", [y], {"shape": shape[:-1] + [n]}, suffix)


def _linear_module(cv, args, kwargs):
    m = cv.module
    return _dense(cv, cv.tensor(args[0]), m.weight, m.bias)


def _linear_function(cv, args, kwargs):
    w, b = _arg(args, kwargs, 1, "weight"), _arg(args, kwargs, 2, "bias")
    if cv.is_dynamic(w) or cv.is_dynamic(b):
        cv.fail("linear weights computed from the inputs are not mapped (use torch.matmul)")
    return _dense(cv, cv.tensor(args[0]), cv.value(w), cv.value(b) if b is not None else None)


def _batch_norm_module(cv, args, kwargs):
    m = cv.module
    if not m.track_running_stats or m.running_mean is None:
        cv.fail("batch norm without running statistics is not mapped (inference uses them)")
    c = m.num_features
    w = m.weight if m.affine else torch.ones(c)
    b = m.bias if m.affine else torch.zeros(c)
    ins = [cv.tensor(args[0]), cv.const(w, "_gamma"), cv.const(b, "_beta"), cv.const(m.running_mean, "_mean"),
           cv.const(m.running_var, "_var")]
    return cv.add("batch_norm", ins, {"epsilon": float(m.eps)})


def _normalize(cv, x, ndims, eps, weight, bias, suffix=""):
    """Layer norm over the last `ndims` axes: (x - mean) / sqrt(var + eps) * weight + bias."""
    rank = len(cv.shape(x))
    red = {"axes": list(range(rank - ndims, rank)), "keepdims": 1}
    mean = cv.add("reduce_mean", [x], red, suffix + "_mean")
    d = cv.add("sub", [x, mean], suffix=suffix + "_centered")
    var = cv.add("reduce_mean", [cv.add("mul", [d, d], suffix=suffix + "_square")], red, suffix + "_var")
    std = cv.add("sqrt", [cv.add("add", [var, cv.scalar(eps, x, suffix + "_eps")], suffix=suffix + "_vareps")],
                 suffix=suffix + "_std")
    y = cv.add("div", [d, std], suffix=suffix + ("_normalized" if weight is not None or bias is not None else ""))
    if weight is not None:
        y = cv.add("mul", [y, cv.const(weight, suffix + "_weight")],
                   suffix=suffix + ("_scaled" if bias is not None else ""))
    if bias is not None:
        y = cv.add("add", [y, cv.const(bias, suffix + "_bias")], suffix=suffix)
    return y


def _layer_norm_module(cv, args, kwargs, m=None, x=None, suffix=""):
    m = m or cv.module
    x = cv.tensor(args[0]) if x is None else x
    w = m.weight if m.elementwise_affine else None
    b = m.bias if m.elementwise_affine else None
    return _normalize(cv, x, len(m.normalized_shape), float(m.eps), w, b, suffix)


def _layer_norm_function(cv, args, kwargs):
    shape = cv.value(_arg(args, kwargs, 1, "normalized_shape"))
    w, b = _arg(args, kwargs, 2, "weight"), _arg(args, kwargs, 3, "bias")
    if cv.is_dynamic(w) or cv.is_dynamic(b):
        cv.fail("layer norm weights computed from the inputs are not mapped")
    return _normalize(cv, cv.tensor(args[0]), len(shape), float(cv.value(_arg(args, kwargs, 4, "eps", 1e-5))),
                      cv.value(w), cv.value(b))


def _embedding_module(cv, args, kwargs):
    m = cv.module
    if m.max_norm is not None:
        cv.fail("an embedding with max_norm is not mapped (it renormalizes its weights as it runs)")
    return cv.add("gather", [cv.const(m.weight, "_weight"), cv.tensor(args[0])], {"axis": 0})


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------

def _pool(cv, op, x, kernel, stride, padding, dilation, ceil_mode, count_include_pad=None):
    kernel = _pair(kernel)
    stride = _pair(stride) if stride not in (None, []) else kernel
    p = _pair(padding)
    attrs = {"kernel": kernel, "strides": stride, "pads": [p[0], p[1], p[0], p[1]], "dilations": _pair(dilation),
             "ceil_mode": int(bool(ceil_mode))}
    if count_include_pad is not None:
        attrs["count_include_pad"] = int(bool(count_include_pad))
    return cv.add(op, [x], attrs)


def _max_pool_module(cv, args, kwargs):
    m = cv.module
    if m.return_indices:
        cv.fail("max pooling with return_indices is not mapped")
    return _pool(cv, "max_pool2d", cv.tensor(args[0]), m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)


def _max_pool_function(cv, args, kwargs):
    v = lambda i, n, d=None: cv.value(_arg(args, kwargs, i, n, d))  # noqa: E731
    if v(6, "return_indices", False):
        cv.fail("max pooling with return_indices is not mapped")
    return _pool(cv, "max_pool2d", cv.tensor(args[0]), v(1, "kernel_size"), v(2, "stride"), v(3, "padding", 0),
                 v(4, "dilation", 1), v(5, "ceil_mode", False))


def _avg_pool(cv, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if divisor_override is not None:
        cv.fail("average pooling with divisor_override is not mapped")
    return _pool(cv, "avg_pool2d", x, kernel, stride, padding, 1, ceil_mode, count_include_pad)


def _avg_pool_module(cv, args, kwargs):
    m = cv.module
    return _avg_pool(cv, cv.tensor(args[0]), m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad,
                     m.divisor_override)


def _avg_pool_function(cv, args, kwargs):
    v = lambda i, n, d=None: cv.value(_arg(args, kwargs, i, n, d))  # noqa: E731
    return _avg_pool(cv, cv.tensor(args[0]), v(1, "kernel_size"), v(2, "stride"), v(3, "padding", 0),
                     v(4, "ceil_mode", False), v(5, "count_include_pad", True), v(6, "divisor_override"))


def _adaptive_avg_pool(cv, x, output_size):
    shape = cv.shape(x)
    if len(shape) != 4:
        cv.fail(f"adaptive average pooling of a rank-{len(shape)} tensor is not mapped (NCHW only)")
    out = _pair(output_size) if not isinstance(output_size, (list, tuple)) else list(output_size)
    out = [shape[2 + i] if o is None else int(o) for i, o in enumerate(out)]
    if out == [1, 1]:
        return cv.add("global_avg_pool2d", [x])
    if shape[2] % out[0] or shape[3] % out[1]:
        cv.fail(f"adaptive average pooling of {shape[2]}x{shape[3]} to {out[0]}x{out[1]} has windows of "
                "different sizes (mapped when the output size divides the input's)")
    k = [shape[2] // out[0], shape[3] // out[1]]
    return cv.add("avg_pool2d", [x], {"kernel": k, "strides": k})


def _adaptive_avg_pool_module(cv, args, kwargs):
    return _adaptive_avg_pool(cv, cv.tensor(args[0]), cv.module.output_size)


def _adaptive_avg_pool_function(cv, args, kwargs):
    return _adaptive_avg_pool(cv, cv.tensor(args[0]), cv.value(_arg(args, kwargs, 1, "output_size")))


# ---------------------------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------------------------

def _to_out_shape(cv, args, kwargs):
    """flatten, view, reshape, squeeze, unsqueeze: the same elements in PyTorch's output shape."""
    return cv.add("reshape", [cv.tensor(args[0])], {"shape": list(cv.out_shape)})


def _expand(cv, args, kwargs):
    return cv.add("expand", [cv.tensor(args[0])], {"shape": list(cv.out_shape)})


def _transpose(cv, args, kwargs):
    x = cv.tensor(args[0])
    rank = len(cv.shape(x))
    a = _axis(cv.value(_arg(args, kwargs, 1, "dim0")), rank)
    b = _axis(cv.value(_arg(args, kwargs, 2, "dim1")), rank)
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return cv.add("transpose", [x], {"perm": perm})


def _permute(cv, args, kwargs):
    x = cv.tensor(args[0])
    dims = args[1:] if len(args) > 1 else [kwargs["dims"]]
    dims = cv.value(list(dims))
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    rank = len(cv.shape(x))
    return cv.add("transpose", [x], {"perm": [_axis(d, rank) for d in dims]})


def _cat(cv, args, kwargs):
    tensors = _arg(args, kwargs, 0, "tensors")
    dim = cv.value(_arg(args, kwargs, 1, "dim", 0))
    ids = [cv.tensor(t) for t in tensors]
    return cv.add("concat", ids, {"axis": _axis(dim, len(cv.shape(ids[0])))})


def _stack(cv, args, kwargs):
    tensors = _arg(args, kwargs, 0, "tensors")
    dim = cv.value(_arg(args, kwargs, 1, "dim", 0))
    ids = [cv.tensor(t) for t in tensors]
    rank = len(cv.shape(ids[0])) + 1
    axis = _axis(dim, rank)
    parts = []
    for k, i in enumerate(ids):
        s = list(cv.shape(i))
        parts.append(cv.add("reshape", [i], {"shape": s[:axis] + [1] + s[axis:]}, f"_part{k}"))
    return cv.add("concat", parts, {"axis": axis})


def _getitem(cv, args, kwargs):
    src, index = args[0], cv.value(args[1])
    if isinstance(cv.ids.get(src), tuple):  # an element of a call that returns several tensors
        v = cv.ids[src][index]
        if v is None:
            cv.fail(f"element {index} of {src.name!r} is not computed by Loom")
        return v
    x = cv.tensor(src)
    shape = list(cv.shape(x))
    index = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (torch.Tensor, list, bool)) for i in index):
        cv.fail("indexing with tensors, lists or booleans is not mapped (slices, integers, None and ... are)")
    if index.count(Ellipsis) > 1:
        cv.fail("an index with more than one ...")
    if Ellipsis in index:
        k = index.index(Ellipsis)
        used = sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:k] + (slice(None),) * (len(shape) - used) + index[k + 1:]
    starts, ends, axes, steps = [], [], [], []
    axis = 0
    for i in index:
        if i is None:
            continue
        if isinstance(i, int):
            i = i + shape[axis] if i < 0 else i
            starts.append(i), ends.append(i + 1), axes.append(axis), steps.append(1)
        elif isinstance(i, slice):
            start, stop, step = i.indices(shape[axis])
            if step != 1 or start != 0 or stop != shape[axis]:
                starts.append(start), ends.append(stop), axes.append(axis), steps.append(step)
        else:
            cv.fail(f"index {i!r} is not mapped")
        axis += 1
    y = x
    if axes:
        y = cv.add("slice", [x], {"starts": starts, "ends": ends, "axes": axes, "steps": steps}, "_slice")
    return cv.add("reshape", [y], {"shape": list(cv.out_shape)})


def _reduce(op):
    def handle(cv, args, kwargs):
        x = cv.tensor(args[0])
        rank = len(cv.shape(x))
        dim = cv.value(_arg(args, kwargs, 1, "dim"))
        keep = cv.value(_arg(args, kwargs, 2, "keepdim", False))
        if kwargs.get("dtype") is not None:
            cv.fail("a reduction with dtype is not mapped")
        axes = list(range(rank)) if dim is None else [_axis(d, rank) for d in (dim if isinstance(dim, (list, tuple))
                                                                               else [dim])]
        if len(axes) < rank or keep:
            return cv.add(op, [x], {"axes": axes, "keepdims": int(bool(keep))})
        # Every axis away: Loom reduces to [1, ..., 1], then takes PyTorch's rank-0 shape.
        kept = cv.add(op, [x], {"axes": axes, "keepdims": 1}, "_kept")
        return cv.add("reshape", [kept], {"shape": list(cv.out_shape)})
    return handle


def _matmul(cv, args, kwargs):
    a, b = args[0], _arg(args, kwargs, 1, "other")
    if cv.is_dynamic(a) and not cv.is_dynamic(b) and len(cv.value(b).shape) == 2:
        w = cv.value(b)  # x @ W with constant W: a dense layer (the int8 and accelerator paths take it)
        return _dense(cv, cv.tensor(a), w.t().contiguous(), None)
    return cv.add("matmul", [cv.tensor(a), cv.tensor(b)])


def _contiguous(cv, args, kwargs):
    return cv.tensor(args[0])


# ---------------------------------------------------------------------------------------------
# Attention and transformer layers
# ---------------------------------------------------------------------------------------------

def _attention(cv, m, query, key, value, attn_mask, suffix):
    """nn.MultiheadAttention's output (heads' scaled dot products, out projection), as PyTorch
    computes it: q / sqrt(head_dim) times k, plus the mask, softmax, times v."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    if not m.batch_first:  # [L, B, E] -> [B, L, E]
        query, key, value = (cv.add("transpose", [t], {"perm": [1, 0, 2]}, f"{suffix}_{n}_bf")
                             for t, n in ((query, "q"), (key, "k"), (value, "v")))
    if m._qkv_same_embed_dim:
        wq, wk, wv = m.in_proj_weight[:e], m.in_proj_weight[e:2 * e], m.in_proj_weight[2 * e:]
    else:
        wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    bq = bk = bv = None
    if m.in_proj_bias is not None:
        bq, bk, bv = m.in_proj_bias[:e], m.in_proj_bias[e:2 * e], m.in_proj_bias[2 * e:]
    if m.bias_k is not None or m.add_zero_attn:
        cv.fail("attention with bias_k/bias_v or add_zero_attn is not mapped")

    def heads(x, w, b, name, perm):
        s = cv.shape(x)
        y = _dense(cv, x, w, b, f"{suffix}_{name}")
        y = cv.add("reshape", [y], {"shape": [s[0], s[1], h, d]}, f"{suffix}_{name}_heads")
        return cv.add("transpose", [y], {"perm": perm}, f"{suffix}_{name}_t")

    q = heads(query, wq, bq, "q", [0, 2, 1, 3])  # [B, H, L, D]
    k = heads(key, wk, bk, "k", [0, 2, 3, 1])  # [B, H, D, S]
    v = heads(value, wv, bv, "v", [0, 2, 1, 3])  # [B, H, S, D]
    q = cv.add("div", [q, cv.scalar(math.sqrt(d), q, f"{suffix}_sqrt_d")], suffix=f"{suffix}_q_scaled")
    scores = cv.add("matmul", [q, k], suffix=f"{suffix}_scores")
    if attn_mask is not None:
        mask = cv.value(attn_mask) if not isinstance(attn_mask, torch.Tensor) else attn_mask
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape).masked_fill(mask, float("-inf"))
        if mask.dim() == 3:  # [B * H, L, S]
            mask = mask.reshape(-1, h, mask.shape[1], mask.shape[2])
        scores = cv.add("add", [scores, cv.const(mask.float(), f"{suffix}_mask")], suffix=f"{suffix}_masked")
    p = cv.add("softmax", [scores], {"axis": 3}, f"{suffix}_weights")
    o = cv.add("matmul", [p, v], suffix=f"{suffix}_context")  # [B, H, L, D]
    o = cv.add("transpose", [o], {"perm": [0, 2, 1, 3]}, f"{suffix}_context_t")
    s = cv.shape(o)
    o = cv.add("reshape", [o], {"shape": [s[0], s[1], e]}, f"{suffix}_merged")
    o = _dense(cv, o, m.out_proj.weight, m.out_proj.bias, f"{suffix}_out")
    if not m.batch_first:
        o = cv.add("transpose", [o], {"perm": [1, 0, 2]}, f"{suffix}_out_lbe")
    return o


def _static_mask(cv, mask, name):
    """An attention mask's value: a constant (a buffer, or computed from parameters and shapes)."""
    if mask is None:
        return None
    if cv.is_dynamic(mask):
        cv.fail(f"{name} computed from the inputs is not mapped (a constant mask is)")
    return cv.value(mask)


def _check_no_padding_mask(cv, mask, name):
    if mask is not None and cv.value(mask) is not None:
        cv.fail(f"{name} is not mapped (pad the sequence, or use attn_mask)")


def _multihead_attention_module(cv, args, kwargs):
    m = cv.module
    q, k, v = (cv.tensor(_arg(args, kwargs, i, n)) for i, n in enumerate(("query", "key", "value")))
    _check_no_padding_mask(cv, _arg(args, kwargs, 3, "key_padding_mask"), "key_padding_mask")
    mask = _static_mask(cv, _arg(args, kwargs, 5, "attn_mask"), "attn_mask")
    out = _attention(cv, m, q, k, v, mask, "")
    return (out, None)  # the averaged weights are not computed: reading them is an error at getitem


def _encoder_layer(cv, m, x, mask, suffix):
    if not m.norm_first and not isinstance(m.norm1, nn.LayerNorm):
        cv.fail("an encoder layer without LayerNorm is not mapped")
    act = m.activation
    if isinstance(act, str):
        act = {"relu": F.relu, "gelu": F.gelu}.get(act)

    def activation(y):
        if act is F.relu or isinstance(act, nn.ReLU):
            return cv.add("relu", [y], suffix=suffix + "_act")
        if act is F.gelu:
            return _gelu_approx(cv, y, "none")
        if isinstance(act, nn.GELU):
            return _gelu_approx(cv, y, act.approximate)
        cv.fail(f"encoder layer activation {act!r} is not mapped (relu, gelu)")

    def sa(y):
        return _attention(cv, m.self_attn, y, y, y, mask, suffix + "_attn")

    def ff(y):
        hidden = activation(_dense(cv, y, m.linear1.weight, m.linear1.bias, suffix + "_ff1"))
        return _dense(cv, hidden, m.linear2.weight, m.linear2.bias, suffix + "_ff2")

    def norm(nm, y, name):
        return _layer_norm_module(cv, None, None, m=nm, x=y, suffix=suffix + name)

    if m.norm_first:
        x = cv.add("add", [x, sa(norm(m.norm1, x, "_norm1"))], suffix=suffix + "_res1")
        return cv.add("add", [x, ff(norm(m.norm2, x, "_norm2"))], suffix=suffix + "_res2")
    x = norm(m.norm1, cv.add("add", [x, sa(x)], suffix=suffix + "_res1"), "_norm1")
    return norm(m.norm2, cv.add("add", [x, ff(x)], suffix=suffix + "_res2"), "_norm2")


def _encoder_layer_module(cv, args, kwargs):
    _check_no_padding_mask(cv, _arg(args, kwargs, 2, "src_key_padding_mask"), "src_key_padding_mask")
    mask = _static_mask(cv, _arg(args, kwargs, 1, "src_mask"), "src_mask")
    return _encoder_layer(cv, cv.module, cv.tensor(args[0]), mask, "")


def _encoder_module(cv, args, kwargs):
    m = cv.module
    _check_no_padding_mask(cv, _arg(args, kwargs, 2, "src_key_padding_mask"), "src_key_padding_mask")
    mask = _static_mask(cv, _arg(args, kwargs, 1, "mask"), "mask")
    x = cv.tensor(args[0])
    for i, layer in enumerate(m.layers):
        x = _encoder_layer(cv, layer, x, mask, f"_layers_{i}")
    if m.norm is not None:
        x = _layer_norm_module(cv, None, None, m=m.norm, x=x, suffix="_norm")
    return x


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

# PyTorch's gate blocks in ONNX's order (LSTM: i f g o -> i o f c; GRU: r z n -> z r h).
_GATE_ORDER = {nn.LSTM: [0, 3, 1, 2], nn.GRU: [1, 0, 2], nn.RNN: [0]}


def _recurrent_module(cv, args, kwargs):
    """nn.LSTM, nn.GRU and nn.RNN (every layer and direction) as Graph.add_recurrent layers, the
    weights reordered into ONNX's gate order; the states between layers as PyTorch passes them."""
    m = cv.module
    cell = {nn.LSTM: "lstm", nn.GRU: "gru", nn.RNN: "rnn"}[type(m)]
    if getattr(m, "proj_size", 0):
        cv.fail("an LSTM with projections (proj_size) is not mapped")
    x = cv.tensor(args[0])
    if len(cv.shape(x)) != 3:
        cv.fail("an unbatched (2-D) input is not mapped; give [seq, batch, features] or batch first")
    hx = args[1] if len(args) > 1 else kwargs.get("hx")
    h0 = c0 = None
    if hx is not None:
        if cell == "lstm":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                cv.fail("an LSTM's initial state is a tuple (h0, c0)")
            h0, c0 = cv.tensor(hx[0]), cv.tensor(hx[1])
        else:
            h0 = cv.tensor(hx)
    dirs, H, L = (2 if m.bidirectional else 1), m.hidden_size, m.num_layers
    if m.batch_first:
        x = cv.add("transpose", [x], {"perm": [1, 0, 2]}, "_seq_first")
    seq, batch = cv.shape(x)[:2]
    order = _GATE_ORDER[type(m)]
    activations = None if cell != "rnn" else [m.nonlinearity]

    def onnx_gates(t):  # [G*H, ...] in ONNX's gate order
        return torch.cat([t[k * H:(k + 1) * H] for k in order])

    hs, cs = [], []
    for layer in range(L):
        sfx = [f"_l{layer}" + ("_reverse" if d else "") for d in range(dirs)]
        params = [f"l{layer}" + ("_reverse" if d else "") for d in range(dirs)]
        with torch.no_grad():
            w = torch.stack([onnx_gates(getattr(m, "weight_ih_" + p)) for p in params])
            r = torch.stack([onnx_gates(getattr(m, "weight_hh_" + p)) for p in params])
            b = torch.stack([torch.cat([onnx_gates(getattr(m, "bias_ih_" + p)), onnx_gates(getattr(m, "bias_hh_" + p))])
                             for p in params]) if m.bias else None
        states = {}
        for key, full in (("initial_h", h0), ("initial_c", c0)):
            if full is not None:
                states[key] = cv.add("slice", [full], {"starts": [layer * dirs], "ends": [(layer + 1) * dirs],
                                                      "axes": [0], "steps": [1]}, f"_{key}{layer}")
        y, y_h, y_c = cv.graph.add_recurrent(
            cell, x, cv.const(w, sfx[0] + "_W"), cv.const(r, sfx[0] + "_R"),
            cv.const(b, sfx[0] + "_B") if b is not None else None, hidden=H,
            direction="bidirectional" if dirs == 2 else "forward", linear_before_reset=cell == "gru",
            activations=activations, name=cv._name(cv.node.name + f"_l{layer}"), **states)
        # Y [seq, D, batch, H] -> [seq, batch, D*H]: the next layer's input and the output
        y = cv.add("transpose", [y], {"perm": [0, 2, 1, 3]}, f"_l{layer}_y")
        x = cv.add("reshape", [y], {"shape": [seq, batch, dirs * H]}, f"_l{layer}_out")
        hs.append(y_h)
        cs.append(y_c)
    out = cv.add("transpose", [x], {"perm": [1, 0, 2]}, "_batch_first") if m.batch_first else x
    h_n = hs[0] if L == 1 else cv.add("concat", hs, {"axis": 0}, "_h_n")
    if cell != "lstm":
        return (out, h_n)
    c_n = cs[0] if L == 1 else cv.add("concat", cs, {"axis": 0}, "_c_n")
    return (out, (h_n, c_n))


MODULES = {
    nn.Conv2d: _conv2d_module,
    nn.ConvTranspose2d: _conv_transpose2d_module,
    nn.Upsample: _upsample_module,
    nn.LSTM: _recurrent_module,
    nn.GRU: _recurrent_module,
    nn.RNN: _recurrent_module,
    nn.Linear: _linear_module,
    nn.BatchNorm2d: _batch_norm_module,
    nn.LayerNorm: _layer_norm_module,
    nn.Embedding: _embedding_module,
    nn.ReLU: _unary("relu"),
    nn.ReLU6: _relu6,
    nn.Sigmoid: _unary("sigmoid"),
    nn.Tanh: _unary("tanh"),
    nn.Hardswish: _unary("hard_swish"),
    nn.Hardsigmoid: _unary("hard_sigmoid", {"alpha": 1.0 / 6.0, "beta": 0.5}),
    nn.SiLU: _silu,
    nn.GELU: _gelu_module,
    nn.LeakyReLU: _leaky_relu_module,
    nn.ELU: _elu_module,
    nn.Softmax: _softmax_module(False),
    nn.LogSoftmax: _softmax_module(True),
    nn.MaxPool2d: _max_pool_module,
    nn.AvgPool2d: _avg_pool_module,
    nn.AdaptiveAvgPool2d: _adaptive_avg_pool_module,
    nn.Flatten: _to_out_shape,
    nn.Dropout: _identity,
    nn.Identity: _identity,
    nn.MultiheadAttention: _multihead_attention_module,
    nn.TransformerEncoderLayer: _encoder_layer_module,
    nn.TransformerEncoder: _encoder_module,
}

FUNCTIONS = {
    operator.add: _binary("add"), operator.iadd: _binary("add"), torch.add: _binary("add"),
    operator.sub: _binary("sub"), operator.isub: _binary("sub"), torch.sub: _binary("sub"),
    operator.mul: _binary("mul"), operator.imul: _binary("mul"), torch.mul: _binary("mul"),
    operator.truediv: _binary("div"), operator.itruediv: _binary("div"), torch.div: _binary("div"),
    torch.maximum: _binary("maximum"), torch.minimum: _binary("minimum"), torch.pow: _binary("pow"),
    operator.pow: _binary("pow"),
    operator.neg: _unary("neg"), torch.neg: _unary("neg"),
    operator.gt: _binary("greater"), torch.gt: _binary("greater"), operator.ge: _binary("greater_equal"),
    torch.ge: _binary("greater_equal"), operator.lt: _binary("less"), torch.lt: _binary("less"),
    operator.le: _binary("less_equal"), torch.le: _binary("less_equal"), operator.eq: _binary("equal"),
    torch.eq: _binary("equal"), operator.ne: _not_equal, torch.ne: _not_equal,
    operator.and_: _binary("logical_and"), operator.or_: _binary("logical_or"), operator.invert: _unary("logical_not"),
    torch.logical_and: _binary("logical_and"), torch.logical_or: _binary("logical_or"),
    torch.logical_not: _unary("logical_not"), torch.where: _where,
    operator.getitem: _getitem,
    operator.matmul: _matmul, torch.matmul: _matmul, torch.bmm: _matmul,
    torch.relu: _unary("relu"), F.relu: _unary("relu"), F.relu6: _relu6,
    torch.sigmoid: _unary("sigmoid"), F.sigmoid: _unary("sigmoid"),
    torch.tanh: _unary("tanh"), F.tanh: _unary("tanh"),
    torch.exp: _unary("exp"), torch.sqrt: _unary("sqrt"), torch.abs: _unary("abs"), torch.erf: _unary("erf"),
    torch.rsqrt: lambda cv, a, k: cv.add("reciprocal", [cv.add("sqrt", [cv.tensor(a[0])], suffix="_sqrt")]),
    F.hardswish: _unary("hard_swish"), F.hardsigmoid: _unary("hard_sigmoid", {"alpha": 1.0 / 6.0, "beta": 0.5}),
    F.hardtanh: lambda cv, a, k: _hardtanh(cv.value(_arg(a, k, 1, "min_val", -1.0)),
                                           cv.value(_arg(a, k, 2, "max_val", 1.0)))(cv, a, k),
    F.silu: _silu, F.gelu: _gelu, F.leaky_relu: _leaky_relu,
    F.softmax: _softmax(False), torch.softmax: _softmax(False),
    F.log_softmax: _softmax(True), torch.log_softmax: _softmax(True),
    F.dropout: lambda cv, a, k: (cv.fail("F.dropout with training=True (its default) is not inference; pass "
                                         "training=self.training") if cv.value(_arg(a, k, 2, "training", True))
                                 else _identity(cv, a, k)),
    F.conv2d: _conv2d_function, F.linear: _linear_function, F.layer_norm: _layer_norm_function,
    F.max_pool2d: _max_pool_function, F.avg_pool2d: _avg_pool_function,
    F.adaptive_avg_pool2d: _adaptive_avg_pool_function,
    F.interpolate: _interpolate,
    torch.flatten: _to_out_shape, torch.reshape: _to_out_shape, torch.squeeze: _to_out_shape,
    torch.unsqueeze: _to_out_shape,
    torch.transpose: _transpose, torch.permute: _permute,
    torch.cat: _cat, torch.concat: _cat, torch.stack: _stack,
    torch.mean: _reduce("reduce_mean"), torch.sum: _reduce("reduce_sum"),
}

METHODS = {
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"), "div": _binary("div"),
    "gt": _binary("greater"), "ge": _binary("greater_equal"), "lt": _binary("less"), "le": _binary("less_equal"),
    "eq": _binary("equal"), "ne": _not_equal, "logical_not": _unary("logical_not"),
    "add_": _binary("add"), "mul_": _binary("mul"),
    "relu": _unary("relu"), "sigmoid": _unary("sigmoid"), "tanh": _unary("tanh"), "exp": _unary("exp"),
    "sqrt": _unary("sqrt"), "abs": _unary("abs"), "neg": _unary("neg"),
    "softmax": _softmax(False), "log_softmax": _softmax(True),
    "flatten": _to_out_shape, "view": _to_out_shape, "reshape": _to_out_shape, "squeeze": _to_out_shape,
    "unsqueeze": _to_out_shape, "view_as": _to_out_shape, "reshape_as": _to_out_shape,
    "expand": _expand, "expand_as": _expand,
    "transpose": _transpose, "permute": _permute,
    "contiguous": _contiguous, "clone": _contiguous, "detach": _contiguous,
    "mean": _reduce("reduce_mean"), "sum": _reduce("reduce_sum"),
    "matmul": _matmul,
}


def handler_for(node, gm):
    """The handler of an fx node's call, or None."""
    if node.op == "call_module":
        return MODULES.get(type(gm.get_submodule(node.target)))
    if node.op == "call_method":
        return METHODS.get(node.target)
    if node.op == "call_function":
        return FUNCTIONS.get(node.target)
    return None
