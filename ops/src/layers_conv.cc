// conv2d, dense and batched matmul for whole models (see layers.h).
#include "loom/ops/layers.h"

#include <cstdint>

#include "loom/ops/nn.h"

namespace loom::ops {

using namespace loom::ir;

Expr widening_mul(Expr a, Expr b) {
  DataType t = a.type();
  if (t.is_float() || t.bits() >= 32) return a * b;
  DataType acc = DataType::Int(32, t.lanes());
  return cast(acc, a) * cast(acc, b);
}

// The constant shape, or the largest one where extents are symbolic (layers.h).
static Shape max_shape_or_shape(const Tensor& t) { return has_symbolic_extent(t) ? max_shape_of(t) : shape_of(t); }

Shape shape_of(const Tensor& t) {
  Shape s;
  for (int d = 0; d < t.ndim(); ++d) s.push_back(const_dim(t, d));
  return s;
}

int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation,
                   bool ceil_mode) {
  // 128-bit: pads, kernel and dilation come from model files and may be anything.
  using Wide = __int128;
  Wide span = Wide(in) + pad_begin + pad_end - (Wide(dilation) * (Wide(kernel) - 1) + 1);
  if (span < 0 || stride <= 0) return 0;
  Wide out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // A window must start inside the input or the leading padding (PyTorch's and ONNX's rule).
  if (ceil_mode && (out - 1) * stride >= Wide(in) + pad_begin) --out;
  if (out > INT64_MAX)
    LOOM_THROW(ShapeError, "window output size overflows (input ", in, ", pads ", pad_begin, "+", pad_end, ")");
  return static_cast<int64_t>(out);
}

std::vector<Expr> shape_exprs(const Shape& s) {
  std::vector<Expr> e;
  for (int64_t d : s) {
    // Tensor expressions index with int32 extents.
    if (d < 0 || d > INT32_MAX)
      LOOM_THROW(ShapeError, "dimension ", d, " of ", shape_str(s), " does not fit a 32-bit extent");
    e.push_back(Expr(static_cast<int>(d)));
  }
  return e;
}

Shape conv2d_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  if (x.size() != 4) LOOM_THROW(ShapeError, "conv2d: input must be NCHW (rank 4), has rank ", x.size());
  if (w.size() != 4) LOOM_THROW(ShapeError, "conv2d: weights must be OIHW (rank 4), have rank ", w.size());
  if (p.groups <= 0 || x[1] % p.groups != 0 || w[0] % p.groups != 0)
    LOOM_THROW(ShapeError, "conv2d: ", p.groups, " groups do not divide ", x[1], " input and ", w[0],
               " output channels");
  if (x[1] / p.groups != w[1])
    LOOM_THROW(ShapeError, "conv2d: input has ", x[1], " channels (", x[1] / p.groups,
               " per group) but weights expect ", w[1]);
  for (int i = 0; i < 2; ++i)
    if (p.strides[i] <= 0 || p.dilations[i] <= 0)
      LOOM_THROW(ShapeError, "conv2d: strides and dilations must be positive");
  for (int64_t pd : p.pads)
    if (pd < 0) LOOM_THROW(ShapeError, "conv2d: negative padding");
  int64_t oh = window_out(x[2], w[2], p.strides[0], p.pads[0], p.pads[2], p.dilations[0]);
  int64_t ow = window_out(x[3], w[3], p.strides[1], p.pads[1], p.pads[3], p.dilations[1]);
  if (oh <= 0 || ow <= 0)
    LOOM_THROW(ShapeError, "conv2d: kernel ", w[2], "x", w[3], " (dilated) is larger than the padded input ", x[2], "x",
               x[3]);
  return {x[0], w[0], oh, ow};
}

Shape packed_conv_weight_shape(const Shape& w, int64_t b) {
  if (b <= 0 || w[0] % b != 0)
    LOOM_THROW(ShapeError, "conv2d: ", w[0], " output channels are not a multiple of the block ", b);
  return {w[0] / b, w[1], w[2], w[3], b};
}

Tensor conv2d(const Tensor& X, const Tensor& W, const Tensor& bias, const Conv2dParams& p, const std::string& name) {
  Shape xs = shape_of(X), ws = shape_of(W);
  Shape oihw = ws;
  if (p.oc_block > 0) {
    if (ws.size() != 5 || ws[4] != p.oc_block)
      LOOM_THROW(ShapeError, "conv2d '", name, "': weights '", W.name(), "' are not packed by ", p.oc_block);
    oihw = {ws[0] * ws[4], ws[1], ws[2], ws[3]};
  }
  Shape out = conv2d_shape(xs, oihw, p);
  bool padded = p.pads[0] || p.pads[1] || p.pads[2] || p.pads[3];
  Tensor P =
      padded ? pad(X, {0, 0, p.pads[0], p.pads[1], 0, 0, p.pads[2], p.pads[3]}, PadMode::Constant, 0.0, name + "_pad")
             : X;
  int64_t cg = oihw[1], og = oihw[0] / p.groups;
  IterVar rc = reduce_axis(int(cg), "rc"), ry = reduce_axis(int(oihw[2]), "ry"), rx = reduce_axis(int(oihw[3]), "rx");
  int b = static_cast<int>(p.oc_block);
  Tensor conv = compute(
      shape_exprs(out),
      [&](Var n, Var f, Var y, Var x) {
        Expr c = p.groups == 1          ? Expr(rc->var)
                 : p.interleaved_groups ? f % int(p.groups) + rc->var * int(p.groups)
                                        : (f / int(og)) * int(cg) + rc->var;
        Expr in = P(n, c, y * int(p.strides[0]) + ry->var * int(p.dilations[0]),
                    x * int(p.strides[1]) + rx->var * int(p.dilations[1]));
        Expr w = b > 0 ? W(f / b, rc, ry, rx, f % b) : W(f, rc, ry, rx);
        return sum(widening_mul(in, w), {rc, ry, rx});
      },
      bias.defined() ? name + "_acc" : name, "conv2d");
  if (!bias.defined()) return conv;
  if (shape_of(bias) != Shape{out[1]})
    LOOM_THROW(ShapeError, "conv2d '", name, "': bias '", bias.name(), "' must have shape [", out[1], "]");
  return compute(
      shape_exprs(out), [&](Var n, Var f, Var y, Var x) { return conv(n, f, y, x) + bias(f); }, name, "elemwise");
}

Shape conv2d_nchwc_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  if (x.size() != 5) LOOM_THROW(ShapeError, "conv2d (NCHWc): input must have rank 5, has ", x.size());
  int64_t ib = x[4], ob = p.oc_block, C = x[1] * ib;
  if (ob <= 0) LOOM_THROW(ShapeError, "conv2d (NCHWc): needs an output channel block");
  Shape oihw;
  if (p.groups == 1 && int8_conv_weight_group(w)) {
    if (w[1] != x[1] || w[4] * w[6] != ib || w[5] != ob)
      LOOM_THROW(ShapeError, "conv2d (NCHWc): grouped int8 weights ", shape_str(w), " do not match input ",
                 shape_str(x), " and block ", ob);
    oihw = {w[0] * ob, C, w[2], w[3]};
  } else if (p.groups == 1) {
    if (w.size() != 6 || w[1] != x[1] || w[4] != ib || w[5] != ob)
      LOOM_THROW(ShapeError, "conv2d (NCHWc): weights ", shape_str(w), " do not match input ", shape_str(x),
                 " and block ", ob);
    oihw = {w[0] * ob, C, w[2], w[3]};
  } else if (w.size() == 5 || p.interleaved_groups) {
    // Interleaved narrow groups: weights [O/b, Cg, kh, kw, b]; group g holds channels g, g + G, ...
    int64_t O = w[0] * ob, G = p.groups;
    if (w.size() != 5 || !p.interleaved_groups || ib != ob || w[4] != ob || O != C || C % G || C / G != w[1] || G % ob)
      LOOM_THROW(ShapeError, "conv2d (NCHWc): ", G, " interleaved groups need weights [C/b, C/groups, kh, kw, b] ",
                 "with b dividing the groups; got weights ", shape_str(w), " for input ", shape_str(x));
    oihw = {O, C / G, w[2], w[3]};
  } else if (w.size() == 6) {
    // Grouped, both group widths whole blocks: weights [O/b, Cg/b, kh, kw, b, b].
    int64_t O = w[0] * ob;
    if (ib != ob || w[4] != ib || w[5] != ob || C % p.groups || O % p.groups || (C / p.groups) % ib ||
        (O / p.groups) % ob || w[1] * ib != C / p.groups)
      LOOM_THROW(ShapeError, "conv2d (NCHWc): ", p.groups, " groups need group widths of whole blocks, weights [O/b, ",
                 "C/groups/b, kh, kw, b, b]; got weights ", shape_str(w), " for input ", shape_str(x));
    oihw = {O, C / p.groups, w[2], w[3]};
  } else {
    if (p.groups != C || w.size() != 4 || ib != ob || w[0] * ob != C || w[3] != ob)
      LOOM_THROW(ShapeError, "conv2d (NCHWc): grouped convolutions need weights [C/b, kh, kw, b] (depthwise) or ",
                 "[O/b, C/groups/b, kh, kw, b, b]; got ", shape_str(w));
    oihw = {C, 1, w[1], w[2]};
  }
  Shape plain = conv2d_shape({x[0], C, x[2], x[3]}, oihw, p);
  return {plain[0], plain[1] / ob, plain[2], plain[3], ob};
}

Tensor conv2d_nchwc(const Tensor& X, const Tensor& W, const Tensor& bias, const Conv2dParams& p,
                    const std::string& name) {
  Shape xs = shape_of(X), ws = shape_of(W);
  Shape out = conv2d_nchwc_shape(xs, ws, p);
  bool padded = p.pads[0] || p.pads[1] || p.pads[2] || p.pads[3];
  Tensor P = padded ? pad(X, {0, 0, p.pads[0], p.pads[1], 0, 0, 0, p.pads[2], p.pads[3], 0}, PadMode::Constant, 0.0,
                          name + "_pad")
                    : X;
  int sh = int(p.strides[0]), sw = int(p.strides[1]), dh = int(p.dilations[0]), dw = int(p.dilations[1]);
  Tensor conv;
  if (int G = int8_conv_weight_group(ws); p.groups == 1 && G) {
    DataType elem = G == 2 ? DataType::Int(16) : DataType::UInt(8);
    if (X.dtype() != DataType::Int(8) || W.dtype() != (G == 2 ? DataType::Int(16) : DataType::Int(8)))
      LOOM_THROW(TypeError, "conv2d '", name, "': the grouped int8 form (groups of ", G, ") takes int8 data and ",
                 G == 2 ? "int16" : "int8", " weights, got ", X.dtype().str(), " and ", W.dtype().str());
    // The padded input converted once, so every group of channels is one 32-bit broadcast.
    const bool offset = G == 4 && p.input_offset;
    Tensor Pg = compute(shape_exprs(shape_of(P)), ComputeFn([&](const std::vector<Var>& v) {
                          Expr x = P(std::vector<Expr>(v.begin(), v.end()));
                          if (offset) x = cast(DataType::Int(16), x) + make_const(DataType::Int(16), 128);
                          return cast(elem, x);
                        }),
                        name + (G == 2 ? "_in16" : "_inu8"), "widen");
    IterVar rco = reduce_axis(int(xs[1]), "rco"), ry = reduce_axis(int(ws[2]), "ry"),
            rx = reduce_axis(int(ws[3]), "rx"), rg = reduce_axis(int(ws[4]), "rg"), re = reduce_axis(G, "re");
    conv = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                     Expr in =
                         Pg(v[0], rco->var, v[2] * sh + ry->var * dh, v[3] * sw + rx->var * dw, rg->var * G + re->var);
                     Expr w = W(v[1], rco->var, ry->var, rx->var, rg->var, v[4], re->var);
                     return sum(cast(DataType::Int(32), in) * cast(DataType::Int(32), w), {rco, ry, rx, rg, re});
                   }),
                   bias.defined() ? name + "_acc" : name, "conv2d");
  } else if (p.groups == 1 || ws.size() == 6) {
    // Grouped: output block v[1] reads the ws[1] input blocks of its group.
    int out_per_group = int(out[1] / p.groups), in_per_group = int(ws[1]);
    IterVar rco = reduce_axis(int(ws[1]), "rco"), ry = reduce_axis(int(ws[2]), "ry"),
            rx = reduce_axis(int(ws[3]), "rx"), rci = reduce_axis(int(xs[4]), "rci");
    conv =
        compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                  Expr cb = p.groups == 1 ? Expr(rco->var) : (v[1] / out_per_group) * in_per_group + rco->var;
                  Expr in = P(v[0], cb, v[2] * sh + ry->var * dh, v[3] * sw + rx->var * dw, rci->var);
                  return sum(widening_mul(in, W(v[1], rco->var, ry->var, rx->var, rci->var, v[4])), {rco, ry, rx, rci});
                }),
                bias.defined() ? name + "_acc" : name, "conv2d");
  } else if (ws.size() == 5) {
    // Interleaved narrow groups: output block v[1] (its channels' j-th members jo = v[1] / GH of the
    // groups in block v[1] % GH) reads the same lanes of input blocks j * GH + v[1] % GH.
    const int GH = int(p.groups / xs[4]);
    IterVar rj = reduce_axis(int(ws[1]), "rj"), ry = reduce_axis(int(ws[2]), "ry"), rx = reduce_axis(int(ws[3]), "rx");
    conv = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                     Expr in =
                         P(v[0], rj->var * GH + v[1] % GH, v[2] * sh + ry->var * dh, v[3] * sw + rx->var * dw, v[4]);
                     return sum(widening_mul(in, W(v[1], rj->var, ry->var, rx->var, v[4])), {rj, ry, rx});
                   }),
                   bias.defined() ? name + "_acc" : name, "conv2d");
  } else {
    IterVar ry = reduce_axis(int(ws[1]), "ry"), rx = reduce_axis(int(ws[2]), "rx");
    conv = compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                     Expr in = P(v[0], v[1], v[2] * sh + ry->var * dh, v[3] * sw + rx->var * dw, v[4]);
                     return sum(widening_mul(in, W(v[1], ry->var, rx->var, v[4])), {ry, rx});
                   }),
                   bias.defined() ? name + "_acc" : name, "conv2d");
  }
  if (!bias.defined()) return conv;
  int ob = static_cast<int>(p.oc_block);
  if (shape_of(bias) != Shape{out[1] * ob})
    LOOM_THROW(ShapeError, "conv2d '", name, "': bias '", bias.name(), "' must have shape [", out[1] * ob, "]");
  return compute(shape_exprs(out), ComputeFn([&](const std::vector<Var>& v) {
                   return conv(std::vector<Expr>(v.begin(), v.end())) + bias(v[1] * ob + v[4]);
                 }),
                 name, "elemwise");
}

int int8_conv_weight_group(const Shape& w) { return w.size() == 7 && (w[6] == 2 || w[6] == 4) ? int(w[6]) : 0; }

NDArray pack_conv_weights_int8_groups(const NDArray& w, int64_t ib, int64_t ob, int G) {
  if (w.ndim() != 4 || w.dtype() != DataType::Int(8))
    LOOM_THROW(TypeError, "grouped int8 conv weights: need OIHW int8, got ", w.describe());
  const int64_t O = w.shape()[0], C = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  if ((G != 2 && G != 4) || ib <= 0 || ob <= 0 || ib % G != 0 || C % ib != 0 || O % ob != 0)
    LOOM_THROW(ShapeError, "grouped int8 conv weights: groups of ", G, " (2 or 4) must divide the input block ", ib,
               ", and blocks ", ib, " and ", ob, " the ", C, " input and ", O, " output channels");
  NDArray p = NDArray::empty({O / ob, C / ib, kh, kw, ib / G, ob, G}, G == 2 ? DataType::Int(16) : DataType::Int(8));
  const int8_t* src = w.data<int8_t>();
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          int64_t at =
              ((((((o / ob) * (C / ib) + c / ib) * kh + y) * kw + x) * (ib / G) + (c % ib) / G) * ob + o % ob) * G +
              c % G;
          int8_t v = src[((o * C + c) * kh + y) * kw + x];
          if (G == 2)
            p.data<int16_t>()[at] = v;
          else
            p.data<int8_t>()[at] = v;
        }
  return p;
}

Tensor to_nchwc(const Tensor& X, int64_t b, const std::string& name) {
  Shape xs = shape_of(X);
  if (xs.size() != 4 || b <= 0 || xs[1] % b != 0)
    LOOM_THROW(ShapeError, "layout_transform '", name, "': ", shape_str(xs), " cannot be blocked by ", b, " channels");
  int bb = static_cast<int>(b);
  return compute(shape_exprs({xs[0], xs[1] / b, xs[2], xs[3], b}),
                 ComputeFn([&](const std::vector<Var>& v) { return X(v[0], v[1] * bb + v[4], v[2], v[3]); }), name,
                 "injective");
}

Tensor from_nchwc(const Tensor& X, const std::string& name) {
  Shape xs = shape_of(X);
  if (xs.size() != 5) LOOM_THROW(ShapeError, "layout_transform '", name, "': input must be NCHWc (rank 5)");
  int b = static_cast<int>(xs[4]);
  return compute(shape_exprs({xs[0], xs[1] * xs[4], xs[2], xs[3]}),
                 ComputeFn([&](const std::vector<Var>& v) { return X(v[0], v[1] / b, v[2], v[3], v[1] % b); }), name,
                 "injective");
}

Tensor dense(const Tensor& X, const Tensor& W, const Tensor& bias, int64_t n_block, const std::string& name) {
  // The rows may be symbolic (a transformer's tokens, layers.h); the features are constant.
  Shape ws = shape_of(W);
  if (X.ndim() != 2) LOOM_THROW(ShapeError, "dense '", name, "': input must be 2-D, has rank ", X.ndim());
  int64_t N = n_block > 0 ? (ws.size() == 3 ? ws[0] * ws[2] : -1) : (ws.size() == 2 ? ws[0] : -1);
  int64_t K = n_block > 0 ? (ws.size() == 3 ? ws[1] : -1) : (ws.size() == 2 ? ws[1] : -1);
  if (N < 0 || (n_block > 0 && ws[2] != n_block))
    LOOM_THROW(ShapeError, "dense '", name, "': weights '", W.name(), "' have shape ", shape_str(ws),
               ", expected [N, K]", n_block > 0 ? " packed as [N/b, K, b]" : "");
  if (K != const_dim(X, 1))
    LOOM_THROW(ShapeError, "dense '", name, "': input has ", const_dim(X, 1), " features, weights expect ", K);
  IterVar k = reduce_axis(int(K), "k");
  int b = static_cast<int>(n_block);
  const Expr rows = X.shape()[0];
  Tensor y = compute(
      {rows, int(N)},
      [&](Var m, Var n) {
        Expr w = b > 0 ? W(n / b, k, n % b) : W(n, k);
        return sum(widening_mul(X(m, k), w), {k});
      },
      bias.defined() ? name + "_acc" : name, "dense");
  if (!bias.defined()) return y;
  if (shape_of(bias) != Shape{N})
    LOOM_THROW(ShapeError, "dense '", name, "': bias '", bias.name(), "' must have shape [", N, "]");
  return compute(
      {rows, int(N)}, [&](Var m, Var n) { return y(m, n) + bias(n); }, name, "elemwise");
}

Shape matmul_shape(const Shape& a0, const Shape& b0) {
  if (a0.empty() || b0.empty()) LOOM_THROW(ShapeError, "matmul: operands must have rank >= 1");
  Shape a = a0.size() == 1 ? Shape{1, a0[0]} : a0, b = b0.size() == 1 ? Shape{b0[0], 1} : b0;
  if (a.back() != b[b.size() - 2])
    LOOM_THROW(ShapeError, "matmul: inner dimensions differ (", shape_str(a0), " x ", shape_str(b0), ")");
  Shape batch = broadcast_shape(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  Shape out = batch;
  if (a0.size() > 1) out.push_back(a[a.size() - 2]);
  if (b0.size() > 1) out.push_back(b.back());
  return out;
}

Tensor batch_matmul(const Tensor& A, const Tensor& B, const std::string& name) {
  // Extents may be symbolic (layers.h); the largest shapes decide which batch axes broadcast.
  Shape as = max_shape_or_shape(A), bs = max_shape_or_shape(B);
  Shape out = matmul_shape(as, bs);
  const std::vector<Expr>&ae = A.shape(), &be = B.shape();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  size_t r = out.size();
  size_t nb = r - (a_vec ? 0 : 1) - (b_vec ? 0 : 1);
  // The output's extents: batch axes from whichever operand does not broadcast there, then m, n.
  std::vector<Expr> extents;
  for (size_t d = 0; d < nb; ++d) {
    size_t ra = a_vec ? 0 : as.size() - 2, rb = b_vec ? 0 : bs.size() - 2;
    size_t da = d + ra - nb, db = d + rb - nb;  // wraps when the operand has fewer batch axes
    bool from_a = d + ra >= nb && as[da] != 1;
    extents.push_back(from_a ? ae[da] : d + rb >= nb && bs[db] != 1 ? be[db] : Expr(1));
  }
  if (!a_vec) extents.push_back(ae[ae.size() - 2]);
  if (!b_vec) extents.push_back(be.back());
  IterVar k = reduce_axis(ae.back(), "k");
  return compute(extents, ComputeFn([&](const std::vector<Var>& v) {
                   // Output index: batch dims, then m (unless A is a vector), then n (unless B is).
                   Expr m = a_vec ? Expr(0) : Expr(v[nb]);
                   Expr n = b_vec ? Expr(0) : Expr(v[r - 1]);
                   auto operand_index = [&](const Shape& s, bool is_vec, Expr row, Expr col) {
                     std::vector<Expr> idx;
                     size_t sb = is_vec ? 0 : s.size() - 2;  // its batch dims, right-aligned with the output's
                     for (size_t d = 0; d < sb; ++d) idx.push_back(s[d] == 1 ? Expr(0) : Expr(v[nb - sb + d]));
                     if (is_vec) return std::vector<Expr>{&s == &as ? col : row};
                     idx.push_back(row);
                     idx.push_back(col);
                     return idx;
                   };
                   Expr a = A(operand_index(as, a_vec, m, k->var)), b = B(operand_index(bs, b_vec, k->var, n));
                   return sum(a.type().element_of() == DataType::Int(8) ? widening_mul(a, b) : a * b, {k});
                 }),
                 name, "matmul");
}

}  // namespace loom::ops
