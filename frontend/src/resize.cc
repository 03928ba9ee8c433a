#include "loom/frontend/resize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "loom/runtime/error.h"

namespace loom::frontend {

namespace {

const char* const kCtms[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                             "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};

// The input coordinate of output position o (coordinate_transformation_mode).
double source_coordinate(const std::string& ctm, int64_t o, const ResizeAxis& a) {
  double in = double(a.in), out = double(a.out);
  if (ctm == "half_pixel") return (double(o) + 0.5) / a.scale - 0.5;
  if (ctm == "pytorch_half_pixel") return a.out > 1 ? (double(o) + 0.5) / a.scale - 0.5 : 0.0;
  // With scales, ONNX's reference divides by the unrounded output length in * scale.
  double exact = in * a.scale;
  if (ctm == "align_corners") return exact > 1 ? double(o) * (in - 1) / (exact - 1) : 0.0;
  if (ctm == "asymmetric") return double(o) / a.scale;
  if (ctm == "tf_half_pixel_for_nn") return (double(o) + 0.5) / a.scale;
  // tf_crop_and_resize
  return a.out > 1 ? a.roi_start * (in - 1) + double(o) * (a.roi_end - a.roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (a.roi_start + a.roi_end) * (in - 1);
}

double nearest_of(const std::string& rule, double x) {
  if (rule == "floor") return std::floor(x);
  if (rule == "ceil") return std::ceil(x);
  if (rule == "round_prefer_ceil") return std::round(x);
  return x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x);  // round_prefer_floor
}

// Keys' cubic convolution weights of the taps at offsets -1, 0, 1, 2 from floor(x).
std::array<double, 4> cubic_weights(double s, double A) {
  auto far = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 < d < 2
  auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };       // d <= 1
  return {far(s + 1), near(s), near(1 - s), far(2 - s)};
}

// Index and weight tables ([taps, out]) and the crop's outside value ([out]) of one axis.
struct Tables {
  NDArray index, weight, bias;
  bool outside = false;
};

Tables tables(const ResizeAxis& a, const ResizeRules& r, DataType t) {
  int64_t taps = r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  Tables tb{NDArray::empty({taps, a.out}, DataType::Int(32)), NDArray::empty({taps, a.out}, t),
            NDArray::empty({a.out}, t)};
  for (int64_t o = 0; o < a.out; ++o) {
    double x = source_coordinate(r.ctm, o, a);
    bool out_of_range = r.ctm == "tf_crop_and_resize" && (x < 0 || x > double(a.in - 1));
    std::vector<int64_t> pos;
    std::vector<double> w;
    if (r.mode == "nearest") {
      pos = {static_cast<int64_t>(nearest_of(r.nearest, x))};
      w = {1.0};
    } else {
      double base = std::floor(x), s = x - base;
      if (r.mode == "linear") {
        pos = {int64_t(base), int64_t(base) + 1};
        w = {1 - s, s};
      } else {
        auto c = cubic_weights(s, r.cubic_a);
        for (int k = -1; k <= 2; ++k) pos.push_back(int64_t(base) + k);
        w.assign(c.begin(), c.end());
      }
    }
    if (r.exclude_outside) {  // taps outside the input weigh nothing; the rest are renormalized
      double sum = 0;
      for (size_t k = 0; k < pos.size(); ++k) sum += (w[k] *= (pos[k] >= 0 && pos[k] < a.in) ? 1.0 : 0.0);
      for (double& v : w) v = sum != 0 ? v / sum : 0.0;
    }
    for (int64_t k = 0; k < taps; ++k) {
      tb.index.set_from_double(k * a.out + o, double(std::clamp<int64_t>(pos[size_t(k)], 0, a.in - 1)));
      tb.weight.set_from_double(k * a.out + o, out_of_range ? 0.0 : w[size_t(k)]);
    }
    tb.bias.set_from_double(o, out_of_range ? r.extrapolation : 0.0);
    tb.outside |= out_of_range;
  }
  return tb;
}

// The order in which the axes are resampled (the modes are separable: any order gives the same
// values up to rounding). Kernels vectorize along the innermost axis, where every output reads its
// taps through the index table (gathers); along any other axis a row of outputs reads whole input
// rows. So the innermost axis goes first when the others grow: its gathers then run on the smaller
// tensor (DeepLabV3's 14x14 -> 224x224 logits: 16x fewer points gathered).
std::vector<size_t> resample_order(const std::vector<ResizeAxis>& axes) {
  std::vector<size_t> order(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) order[d] = d;
  double in_others = 1, out_others = 1;
  for (size_t d = 0; d + 1 < axes.size(); ++d) in_others *= double(axes[d].in), out_others *= double(axes[d].out);
  if (!axes.empty() && in_others < out_others) std::rotate(order.begin(), order.end() - 1, order.end());
  return order;
}

}  // namespace

std::string unsupported_resize(const ResizeRules& r) {
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic")
    return "mode '" + r.mode + "' is not one of nearest, linear, cubic";
  if (std::find(std::begin(kCtms), std::end(kCtms), r.ctm) == std::end(kCtms))
    return "coordinate_transformation_mode '" + r.ctm + "' is not supported";
  for (const char* rule : {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"})
    if (r.nearest == rule) return "";
  return "nearest_mode '" + r.nearest + "' is not supported";
}

int build_resize(const NodeBuilder& b, int x, DataType dtype, const std::vector<ResizeAxis>& axes,
                 const ResizeRules& r) {
  if (std::string why = unsupported_resize(r); !why.empty()) LOOM_THROW(ModelError, "resize: ", why);
  if (!dtype.is_float()) LOOM_THROW(ModelError, "resize: only floating-point data is supported, is ", dtype.str());
  for (size_t d : resample_order(axes)) {
    const ResizeAxis& a = axes[d];
    if (a.in == a.out && a.scale == 1.0 && r.ctm != "tf_crop_and_resize") continue;
    // The tables are constants built now, up to 4 taps of index and weight per output position:
    // an axis is bounded so they stay within a few hundred MiB, whatever length a model asks for.
    constexpr int64_t kMaxResizedLength = int64_t(1) << 22;
    if (a.out > kMaxResizedLength)
      LOOM_THROW(ModelError, "resize: dimension ", d, " would be ", a.out, " long, above the ", kMaxResizedLength,
                 " a resized dimension may have (its index and weight tables are built at compile time)");
    Tables tb = tables(a, r, dtype);
    std::string suffix = "_axis" + std::to_string(d);
    std::vector<int> in{x, b.constant(tb.index, suffix + "_index"), b.constant(tb.weight, suffix + "_weight")};
    if (tb.outside) in.push_back(b.constant(tb.bias, suffix + "_outside"));
    x = b.op("resample_axis", in, graph::Attrs().set("axis", int64_t(d)), suffix);
  }
  return x;
}

}  // namespace loom::frontend
