// The naive interpreter: reference_run walks the graph and calls each operator's
// OpDef::reference; the reference implementations themselves (namespace ref) are below, plain
// loops over doubles, attached to their operators by the registry files (reference_ops.h).
#include "loom/graph/reference.h"

#include "loom/graph/layout.h"
#include "loom/graph/op_attrs.h"
#include "loom/graph/passes.h"
#include "reference_ops.h"
#include "reference_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "loom/runtime/error.h"

namespace loom::graph {

namespace ref {

namespace {

T conv2d_nchw(const Node& n, const Inputs& in) {
  const T &x = *in[0], &w = *in[1];
  Shape out = n.type.shape;
  const ConvAttrs a = ConvAttrs::from(n);
  const auto &s = a.strides, &d = a.dilations;
  const auto& p = a.pads;
  int64_t groups = a.groups, b = a.oc_block;
  int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t cg = C / groups, og = out[1] / groups;
  int64_t kh = w.shape[2], kw = w.shape[3];
  const bool interleaved = a.interleaved_groups;  // group g: channels g, g + groups, ...
  T y{out, Values(static_cast<size_t>(count(out)))};
  // Output f reads input channels first, first + step, ... and its weights' taps (c, ky, kx) at
  // w_first + ((c * kh + ky) * kw + kx) * w_step (weights [O/b, Cg, kh, kw, b] when b > 0).
  const int64_t w_step = b > 0 ? b : 1, taps = cg * kh * kw;
  for (int64_t nn = 0; nn < out[0]; ++nn)
    for (int64_t f = 0; f < out[1]; ++f) {
      const int64_t first = interleaved ? f % groups : (f / og) * cg, step = interleaved ? groups : 1;
      const double* wf = &w.v[size_t(b > 0 ? (f / b) * taps * b + f % b : f * taps)];
      for (int64_t oy = 0; oy < out[2]; ++oy)
        for (int64_t ox = 0; ox < out[3]; ++ox) {
          double acc = in.size() > 2 ? in[2]->v[f] : 0.0;
          for (int64_t c = 0; c < cg; ++c) {
            const double* xc = &x.v[size_t(((nn * C + first + c * step) * H) * W)];
            const double* wc = wf + c * kh * kw * w_step;
            for (int64_t ky = 0; ky < kh; ++ky) {
              int64_t iy = oy * s[0] + ky * d[0] - p[0];
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t ix = ox * s[1] + kx * d[1] - p[1];
                if (ix < 0 || ix >= W) continue;
                acc += xc[iy * W + ix] * wc[(ky * kw + kx) * w_step];
              }
            }
          }
          y.v[((nn * out[1] + f) * out[2] + oy) * out[3] + ox] = acc;
        }
    }
  return y;
}

// Channel-blocked convolution: [N, C/ib, H, W, ib] -> [N, O/ob, OH, OW, ob], written directly on
// the blocked indices (not by converting to NCHW), so it checks the blocked weight layouts too.
T conv2d_nchwc(const Node& n, const Inputs& in) {
  const T &x = *in[0], &w = *in[1];
  Shape out = n.type.shape;
  const ConvAttrs a = ConvAttrs::from(n);
  const auto &s = a.strides, &d = a.dilations;
  const auto& p = a.pads;
  bool depthwise = a.groups > 1 && w.shape.size() == 4;
  // Interleaved groups (weights [O/b, Cg, kh, kw, b]): output block i[1] reads lane i[4] of input
  // blocks j * GH + i[1] % GH, GH = groups / b.
  bool interleaved = w.shape.size() == 5;
  if (interleaved != a.interleaved_groups)
    LOOM_THROW(ShapeError, "conv2d '", n.name,
               "': interleaved groups take weights [O/b, Cg, kh, kw, b] and only they do; ", "got ", shape_str(w.shape),
               (interleaved ? " without" : " with"), " attribute interleaved_groups");
  int64_t GH = interleaved ? a.groups / x.shape[4] : 0;
  int64_t G = w.shape.size() == 7 ? w.shape[6] : 0;
  // Grouped (weights [O/b, Cg/b, kh, kw, b, b]): output block i[1] reads its group's input blocks.
  int64_t in_blocks = w.shape.size() == 4 || interleaved ? 0 : w.shape[1];
  int64_t out_blocks_per_group = out[1] / a.groups;
  int64_t CB = x.shape[1], H = x.shape[2], W = x.shape[3], ib = x.shape[4], ob = out[4];
  int64_t kh = depthwise ? w.shape[1] : w.shape[2], kw = depthwise ? w.shape[2] : w.shape[3];
  int64_t Cg = interleaved ? w.shape[1] : 0;
  const bool offset = a.input_offset;  // (zero padding only: alter_layout sets it on unpadded convs)
  T y{out, Values(static_cast<size_t>(count(out)))};
  for_each_index(out, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t f = i[1] * ob + i[4];
    double acc = in.size() > 2 ? in[2]->v[f] : 0.0;
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx) {
        int64_t iy = i[2] * s[0] + ky * d[0] - p[0], ix = i[3] * s[1] + kx * d[1] - p[1];
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
        if (interleaved) {
          for (int64_t j = 0; j < Cg; ++j)
            acc += x.v[(((i[0] * CB + j * GH + i[1] % GH) * H + iy) * W + ix) * ib + i[4]] *
                   w.v[(((i[1] * Cg + j) * kh + ky) * kw + kx) * ob + i[4]];
          continue;
        }
        if (depthwise) {
          acc +=
              x.v[(((i[0] * CB + i[1]) * H + iy) * W + ix) * ib + i[4]] * w.v[((i[1] * kh + ky) * kw + kx) * ob + i[4]];
          continue;
        }
        int64_t first = i[1] / out_blocks_per_group * in_blocks;  // 0 unless grouped
        for (int64_t cb = 0; cb < in_blocks; ++cb)
          for (int64_t ci = 0; ci < ib; ++ci) {
            int64_t tap = ((i[1] * in_blocks + cb) * kh + ky) * kw + kx;  // grouped int8 forms: [.., ib/G, ob, G]
            int64_t widx = G ? ((tap * (ib / G) + ci / G) * ob + i[4]) * G + ci % G : (tap * ib + ci) * ob + i[4];
            double xv = x.v[(((i[0] * CB + first + cb) * H + iy) * W + ix) * ib + ci];
            // Byte groups read the input as uint8 (or, with input_offset, the input plus 128), as the kernel does.
            if (G == 4) xv = offset ? xv + 128 : double(uint8_t(int8_t(xv)));
            acc += xv * w.v[widx];
          }
      }
    y.v[flat] = acc;
  });
  return y;
}

}  // namespace

T conv2d(const Node& n, const Inputs& in) {
  return conv_layout(n).blocked() ? conv2d_nchwc(n, in) : conv2d_nchw(n, in);
}

// Winograd F(m x m, 3 x 3) on NCHWc data with transformed weights U [alpha^2, O/ob, C/ib, ib, ob]:
// the algorithm itself, tile by tile in doubles (B^T d B, the products, A^T M A), so the
// transformed weights are checked against the plain convolution of the graph before the pass.
T conv2d_winograd(const Node& n, const Inputs& in) {
  const T &x = *in[0], &u = *in[1];
  const ops::WinogradMatrices& mx = ops::winograd_matrices(int(n.attrs.get_int("tile", 0)));
  const int a = mx.alpha, m = mx.m;
  Shape out = n.type.shape;
  const ConvAttrs attrs = ConvAttrs::from(n);
  const auto& p = attrs.pads;
  int64_t CB = x.shape[1], H = x.shape[2], W = x.shape[3], ib = x.shape[4], OB = out[1], ob = out[4];
  int64_t C = CB * ib, O = OB * ob, groups = attrs.groups;
  int64_t Cg = C / groups, CgB = Cg / ib;  // input channels (and blocks) per group
  T y{out, Values(static_cast<size_t>(count(out)))};
  std::vector<double> v(size_t(a * a * C)), d(size_t(a * a)), t(size_t(a * a)), prod(size_t(a * a));
  for (int64_t nn = 0; nn < out[0]; ++nn)
    for (int64_t ty = 0; ty * m < out[2]; ++ty)
      for (int64_t tx = 0; tx * m < out[3]; ++tx) {
        for (int64_t c = 0; c < C; ++c) {
          for (int i = 0; i < a; ++i)
            for (int j = 0; j < a; ++j) {
              int64_t iy = ty * m + i - p[0], ix = tx * m + j - p[1];
              bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
              d[i * a + j] = inside ? x.v[(((nn * CB + c / ib) * H + iy) * W + ix) * ib + c % ib] : 0.0;
            }
          for (int e1 = 0; e1 < a; ++e1)
            for (int j = 0; j < a; ++j) {
              double s = 0;
              for (int i = 0; i < a; ++i) s += mx.bt[e1][i] * d[i * a + j];
              t[e1 * a + j] = s;
            }
          for (int e1 = 0; e1 < a; ++e1)
            for (int e2 = 0; e2 < a; ++e2) {
              double s = 0;
              for (int j = 0; j < a; ++j) s += t[e1 * a + j] * mx.bt[e2][j];
              v[(e1 * a + e2) * C + c] = s;
            }
        }
        for (int64_t o = 0; o < O; ++o) {
          const int64_t first = o / (O / groups) * Cg;  // the group's first input channel
          for (int nu = 0; nu < a * a; ++nu) {
            double s = 0;
            for (int64_t c = 0; c < Cg; ++c)
              s += v[nu * C + first + c] * u.v[(((nu * OB + o / ob) * CgB + c / ib) * ib + c % ib) * ob + o % ob];
            prod[nu] = s;
          }
          for (int yi = 0; yi < m; ++yi)
            for (int xi = 0; xi < m; ++xi) {
              int64_t oy = ty * m + yi, ox = tx * m + xi;
              if (oy >= out[2] || ox >= out[3]) continue;
              double s = in.size() > 2 ? in[2]->v[o] : 0.0;
              for (int e1 = 0; e1 < a; ++e1)
                for (int e2 = 0; e2 < a; ++e2) s += mx.at[yi][e1] * mx.at[xi][e2] * prod[e1 * a + e2];
              y.v[(((nn * OB + o / ob) * out[2] + oy) * out[3] + ox) * ob + o % ob] = s;
            }
        }
      }
  return y;
}

T dense(const Node& n, const Inputs& in) {
  const T &x = *in[0], &w = *in[1];
  int64_t b = n.attrs.get_int("n_block", 0);
  int64_t M = x.shape[0], K = x.shape[1], N = n.type.shape[1];
  T y{n.type.shape, Values(static_cast<size_t>(M * N))};
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < N; ++j) {
      double acc = in.size() > 2 ? in[2]->v[j] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += x.v[m * K + k] * w.v[b > 0 ? ((j / b) * K + k) * b + j % b : j * K + k];
      y.v[m * N + j] = acc;
    }
  return y;
}

T matmul(const Node& n, const Inputs& in) {
  Shape a = in[0]->shape, b = in[1]->shape;
  bool av = a.size() == 1, bv = b.size() == 1;
  if (av) a = {1, a[0]};
  if (bv) b = {b[0], 1};
  Shape out = n.type.shape;
  Shape full = out;  // with the vector dimensions put back
  if (av) full.insert(full.end() - (bv ? 0 : 1), 1);
  if (bv) full.push_back(1);
  int64_t K = a.back();
  auto sa = strides(a), sb = strides(b);
  T y{out, Values(static_cast<size_t>(count(out)))};
  for_each_index(full, [&](const std::vector<int64_t>& idx, int64_t flat) {
    std::vector<int64_t> ia = idx, ib = idx;
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      ia.back() = k;
      ib[ib.size() - 2] = k;
      acc += in[0]->v[broadcast_flat(a, sa, ia)] * in[1]->v[broadcast_flat(b, sb, ib)];
    }
    y.v[flat] = acc;
  });
  return y;
}

ReferenceFn broadcast(double (*f)(double, double)) {
  return [f](const Node& n, const Inputs& in) {
    T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
    auto sa = strides(in[0]->shape), sb = strides(in[1]->shape);
    for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
      y.v[flat] = f(in[0]->v[broadcast_flat(in[0]->shape, sa, idx)], in[1]->v[broadcast_flat(in[1]->shape, sb, idx)]);
    });
    return y;
  };
}

ReferenceFn broadcast_n(std::function<double(const Node&, const std::vector<double>&)> f) {
  return [f](const Node& n, const Inputs& in) {
    T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
    std::vector<std::vector<int64_t>> st;
    for (const RefTensor* t : in) st.push_back(strides(t->shape));
    std::vector<double> x(in.size());
    for_each_index(y.shape, [&](const std::vector<int64_t>& idx, int64_t flat) {
      for (size_t k = 0; k < in.size(); ++k) x[k] = in[k]->v[broadcast_flat(in[k]->shape, st[k], idx)];
      y.v[flat] = f(n, x);
    });
    return y;
  };
}

ReferenceFn arg_reduce(bool max) {
  return [max](const Node& n, const Inputs& in) {
    const T& x = *in[0];
    int64_t r = static_cast<int64_t>(x.shape.size()), axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += r;
    bool last = n.attrs.get_int("select_last_index", 0) != 0;
    int64_t len = x.shape[size_t(axis)], inner = 1;
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[size_t(d)];
    int64_t outer = count(x.shape) / std::max<int64_t>(1, len * inner);
    T y{n.type.shape, Values(size_t(outer * inner))};
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < len; ++k) {
          double a = x.v[size_t((o * len + k) * inner + i)], b = x.v[size_t((o * len + best) * inner + i)];
          if (max ? (a > b || (last && a == b)) : (a < b || (last && a == b))) best = k;
        }
        y.v[size_t(o * inner + i)] = double(best);
      }
    return y;
  };
}

ReferenceFn elementwise(std::function<double(const Node&, double)> f) {
  return [f](const Node& n, const Inputs& in) {
    T y{n.type.shape, Values(in[0]->v.size())};
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] = f(n, in[0]->v[i]);
    return y;
  };
}

// round(x * 2^-e) clamped, in float32 as the compiled kernels compute it.
double quantized_steps(const Node& n, double x) {
  float v = std::round(static_cast<float>(x) * std::ldexp(1.0f, -static_cast<int>(n.attrs.get_int("exponent"))));
  return std::min<double>(std::max<double>(v, n.attrs.get_int("min", -128)), n.attrs.get_int("max", 127));
}

// Integer requantization: exact in double for int32 inputs.
double requantized(const Node& n, double x) {
  int64_t s = n.attrs.get_int("shift");
  double v = s > 0 ? std::floor((x + std::ldexp(1.0, int(s - 1))) / std::ldexp(1.0, int(s)))
                   : std::clamp(x, -128.0, 127.0) * std::ldexp(1.0, int(-s));
  return std::min<double>(std::max<double>(v, n.attrs.get_int("min", -128)), n.attrs.get_int("max", 127));
}

namespace {

T pool(const Node& n, const T& x, bool is_max) {
  const PoolAttrs a = PoolAttrs::from(n);
  const auto &k = a.kernel, &s = a.strides, &d = a.dilations;
  const auto& p = a.pads;
  bool include = a.count_include_pad;
  Shape out = n.type.shape;
  int64_t H = x.shape[2], W = x.shape[3];
  T y{out, Values(static_cast<size_t>(count(out)))};
  for_each_index(out, [&](const std::vector<int64_t>& i, int64_t flat) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t hs = i[2] * s[0] - p[0], ws = i[3] * s[1] - p[1];
    for (int64_t ky = 0; ky < k[0]; ++ky)
      for (int64_t kx = 0; kx < k[1]; ++kx) {
        int64_t iy = hs + ky * d[0], ix = ws + kx * d[1];
        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
        int64_t c = x.shape.size() == 5 ? x.shape[4] : 1;
        double v = x.v[(((i[0] * x.shape[1] + i[1]) * H + iy) * W + ix) * c + (c > 1 ? i[4] : 0)];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
    // A max window wholly in the padding: the kernels read padding as the type's lowest value
    // (-128 for int8); -inf for floats.
    if (is_max && std::isinf(acc) && !n.type.dtype.is_float())
      acc = n.type.dtype.is_uint() ? 0.0 : -std::ldexp(1.0, n.type.dtype.bits() - 1);
    if (!is_max) {
      // PyTorch/ONNX divisor: the window clipped to the padded input, or to the input itself.
      int64_t he = std::min(hs + d[0] * (k[0] - 1) + 1, H + p[2]), we = std::min(ws + d[1] * (k[1] - 1) + 1, W + p[3]);
      int64_t h0 = hs, w0 = ws;
      if (!include) {
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        he = std::min(he, H);
        we = std::min(we, W);
      }
      acc /= static_cast<double>(((he - h0 + d[0] - 1) / d[0]) * ((we - w0 + d[1] - 1) / d[1]));
    }
    y.v[flat] = acc;
  });
  return y;
}

}  // namespace

T max_pool2d(const Node& n, const Inputs& in) { return pool(n, *in[0], true); }
T avg_pool2d(const Node& n, const Inputs& in) { return pool(n, *in[0], false); }

T softmax(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  int64_t r = static_cast<int64_t>(x.shape.size()), axis = n.attrs.get_int("axis", -1);
  if (axis < 0) axis += r;
  int64_t len = x.shape[axis], inner = 1;
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[d];
  int64_t outer = count(x.shape) / (len * inner);
  T y{x.shape, x.v};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x.v[(o * len + k) * inner + i]);
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.v[(o * len + k) * inner + i] - mx);
      for (int64_t k = 0; k < len; ++k)
        y.v[(o * len + k) * inner + i] = std::exp(x.v[(o * len + k) * inner + i] - mx) / sum;
    }
  return y;
}

ReferenceFn reduce(ops::ReduceKind kind) {
  return [kind](const Node& n, const Inputs& in) {
    const T& x = *in[0];
    std::vector<int64_t> axes = n.attrs.get_ints("axes", {});
    int64_t r = static_cast<int64_t>(x.shape.size());
    std::vector<bool> reduced(size_t(r), axes.empty());
    for (int64_t a : axes) reduced[size_t(a < 0 ? a + r : a)] = true;
    // Each output element gathers the input elements that agree with it on the kept axes.
    Shape kept;
    for (int64_t d = 0; d < r; ++d) kept.push_back(reduced[size_t(d)] ? 1 : x.shape[size_t(d)]);
    std::vector<std::vector<double>> groups(size_t(count(kept)));
    std::vector<int64_t> kst = strides(kept);
    for_each_index(x.shape, [&](const std::vector<int64_t>& i, int64_t flat) {
      int64_t g = 0;
      for (int64_t d = 0; d < r; ++d)
        if (!reduced[size_t(d)]) g += i[size_t(d)] * kst[size_t(d)];
      groups[size_t(g)].push_back(x.v[size_t(flat)]);
    });
    T y{n.type.shape, Values(groups.size())};
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<double>& v = groups[g];
      double acc = 0, mx = -std::numeric_limits<double>::infinity(), mn = -mx;
      for (double e : v) mx = std::max(mx, e), mn = std::min(mn, e);
      switch (kind) {
        case ops::ReduceKind::Max:
          acc = mx;
          break;
        case ops::ReduceKind::Min:
          acc = mn;
          break;
        case ops::ReduceKind::Prod:
          acc = 1;
          for (double e : v) acc *= e;
          break;
        case ops::ReduceKind::LogSumExp:
          for (double e : v) acc += std::exp(e - mx);
          acc = std::log(acc) + mx;
          break;
        default:
          for (double e : v)
            acc += kind == ops::ReduceKind::SumSquare || kind == ops::ReduceKind::L2 ? e * e
                   : kind == ops::ReduceKind::L1                                     ? std::fabs(e)
                                                                                     : e;
          if (kind == ops::ReduceKind::Mean) acc /= double(v.size());
          if (kind == ops::ReduceKind::L2) acc = std::sqrt(acc);
          if (kind == ops::ReduceKind::LogSum) acc = std::log(acc);
      }
      y.v[g] = acc;
    }
    return y;
  };
}

T requantize_channel(const Node& n,
                     const Inputs& in) {  // exact integer arithmetic (doubles would round the 64-bit product)
  const T& x = *in[0];
  const T& m = *in[1];
  T y{n.type.shape, Values(x.v.size())};
  int64_t shift = n.attrs.get_int("shift"), lo = n.attrs.get_int("min", -128), hi = n.attrs.get_int("max", 127);
  const Shape& s = x.shape;
  for_each_index(s, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t c = s.size() == 5 ? i[1] * s[4] + i[4] : i[1];
    int64_t p = int64_t(x.v[flat]) * int64_t(m.v[c]) + (int64_t(1) << (shift - 1));
    int64_t q = p >> shift;  // arithmetic: floor
    y.v[flat] = double(std::clamp(q, lo, hi));
  });
  return y;
}

T add_shifted(const Node& n, const Inputs& in) {
  T y{n.type.shape, Values(in[0]->v.size())};
  double ka = std::ldexp(1.0, int(n.attrs.get_int("lshift_a", 0))),
         kb = std::ldexp(1.0, int(n.attrs.get_int("lshift_b", 0)));
  for (size_t i = 0; i < y.v.size(); ++i) y.v[i] = in[0]->v[i] * ka + in[1]->v[i] * kb;
  return y;
}

T batch_norm(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  double eps = n.attrs.get_float("epsilon", 1e-5);
  int64_t C = x.shape[1], inner = count(x.shape) / (x.shape[0] * C);
  for (int64_t i = 0; i < count(x.shape); ++i) {
    int64_t c = (i / inner) % C;
    y.v[i] = (x.v[i] - in[3]->v[c]) / std::sqrt(in[4]->v[c] + eps) * in[1]->v[c] + in[2]->v[c];
  }
  return y;
}

T global_avg_pool2d(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  int64_t hw = x.shape[2] * x.shape[3], c = x.shape.size() == 5 ? x.shape[4] : 1;
  for (int64_t i = 0; i < count(y.shape); ++i) {
    int64_t outer = i / c, inner = i % c;
    double s = 0;
    for (int64_t k = 0; k < hw; ++k) s += x.v[(outer * hw + k) * c + inner];
    y.v[i] = s / static_cast<double>(hw);
  }
  return y;
}

T layout_transform(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  bool to_blocked = transform_target(n).blocked();
  const Shape& plain = to_blocked ? x.shape : y.shape;
  int64_t b = to_blocked ? y.shape[4] : x.shape[4];
  for_each_index(plain, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t blocked = (((i[0] * (plain[1] / b) + i[1] / b) * plain[2] + i[2]) * plain[3] + i[3]) * b + i[1] % b;
    if (to_blocked)
      y.v[blocked] = x.v[flat];
    else
      y.v[flat] = x.v[blocked];
  });
  return y;
}

T reshape(const Node& n, const Inputs& in) { return T{n.type.shape, in[0]->v}; }

T transpose(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  auto perm = n.attrs.get_ints("perm");
  auto st = strides(x.shape);
  for_each_index(y.shape, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d) src += i[d] * st[perm[d]];
    y.v[flat] = x.v[src];
  });
  return y;
}

T concat(const Node& n, const Inputs& in) {
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  int64_t r = static_cast<int64_t>(y.shape.size()), axis = n.attrs.get_int("axis");
  if (axis < 0) axis += r;
  for_each_index(y.shape, [&](const std::vector<int64_t>& i, int64_t flat) {
    std::vector<int64_t> j = i;
    size_t k = 0;
    while (j[axis] >= in[k]->shape[axis]) j[axis] -= in[k++]->shape[axis];
    auto st = strides(in[k]->shape);
    int64_t src = 0;
    for (size_t d = 0; d < j.size(); ++d) src += j[d] * st[d];
    y.v[flat] = in[k]->v[src];
  });
  return y;
}

T pad(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  auto pads = n.attrs.get_ints("pads");
  std::string mode = n.attrs.get_string("mode", "constant");
  double value = n.attrs.get_float("value", 0.0);
  size_t r = x.shape.size();
  auto st = strides(x.shape);
  for_each_index(y.shape, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t src = 0;
    bool outside = false;
    for (size_t d = 0; d < r; ++d) {
      int64_t j = i[d] - pads[d], len = x.shape[d];
      if (j < 0 || j >= len) {
        if (mode == "constant")
          outside = true;
        else if (mode == "edge")
          j = j < 0 ? 0 : len - 1;
        else
          j = j < 0 ? -j : 2 * (len - 1) - j;
      }
      src += j * st[d];
    }
    y.v[flat] = outside ? value : x.v[src];
  });
  return y;
}

T resize_nearest(const Node& n, const Inputs& in) {
  const T& x = *in[0];
  T y{n.type.shape, Values(static_cast<size_t>(count(n.type.shape)))};
  for_each_index(y.shape, [&](const std::vector<int64_t>& i, int64_t flat) {
    int64_t sy = static_cast<int64_t>(in[1]->v[i[2]]), sx = static_cast<int64_t>(in[2]->v[i[3]]);
    y.v[flat] = x.v[((i[0] * x.shape[1] + i[1]) * x.shape[2] + sy) * x.shape[3] + sx];
  });
  return y;
}

}  // namespace ref

namespace {

RefTensor from_array(const NDArray& a) {
  RefTensor t{a.shape(), std::vector<double>(static_cast<size_t>(a.numel()))};
  for (int64_t i = 0; i < a.numel(); ++i) t.v[i] = a.get_as_double(i);
  return t;
}

}  // namespace

std::vector<NDArray> reference_run(const Graph& graph, const std::vector<NDArray>& inputs) {
  // Output shapes come from the node types: infer them on a copy if the graph is not typed yet.
  bool typed = true;
  for (const Node& n : graph.nodes) typed &= n.typed || !n.is_op();
  Graph inferred;
  if (!typed) {
    inferred = graph;
    infer_types(inferred);
  }
  const Graph& g = typed ? graph : inferred;
  if (inputs.size() != g.inputs.size())
    LOOM_THROW(ModelError, "reference: graph takes ", g.inputs.size(), " inputs, got ", inputs.size());
  std::vector<RefTensor> values(g.nodes.size());
  for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs[i]] = from_array(inputs[i]);
  for (int id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.is_constant()) values[id] = from_array(n.value);
    if (!n.is_op()) continue;
    const OpDef& def = op_def(n.op);
    if (!def.reference)
      LOOM_THROW(ModelError, "reference: operator '", n.op, "' (node '", n.name,
                 "') has no reference implementation (the accelerator's operators: run their graph on the CPU)");
    ref::Inputs in;
    for (int i : n.inputs) in.push_back(&values[i]);
    values[id] = def.reference(n, in);
  }
  std::vector<NDArray> outs;
  for (int o : g.outputs) {
    const TensorType& t = g.type_of(o);
    NDArray a = NDArray::empty(t.shape, t.dtype);
    for (int64_t i = 0; i < a.numel(); ++i) a.set_from_double(i, values[o].v[i]);
    outs.push_back(a);
  }
  return outs;
}

}  // namespace loom::graph
