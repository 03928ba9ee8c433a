// ONNX operator handlers: Resize (and the older Upsample). Every resized axis is resampled on
// its own (the modes are separable): each output position reads a few input positions with
// weights computed here, at import, by ONNX's coordinate and interpolation rules.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

struct AxisResize {
  int64_t in, out;
  double scale, roi_start, roi_end;
};

struct ResizeRules {
  std::string mode, ctm, nearest;
  double cubic_a, extrapolation;
  bool exclude_outside;
};

// The input coordinate of output position o (coordinate_transformation_mode); nullopt for an
// unknown mode.
std::optional<double> source_coordinate(const std::string& ctm, int64_t o, const AxisResize& a) {
  double in = double(a.in), out = double(a.out);
  if (ctm == "half_pixel") return (double(o) + 0.5) / a.scale - 0.5;
  if (ctm == "pytorch_half_pixel") return a.out > 1 ? (double(o) + 0.5) / a.scale - 0.5 : 0.0;
  // With scales, ONNX's reference divides by the unrounded output length in * scale.
  double exact = in * a.scale;
  if (ctm == "align_corners") return exact > 1 ? double(o) * (in - 1) / (exact - 1) : 0.0;
  if (ctm == "asymmetric") return double(o) / a.scale;
  if (ctm == "tf_half_pixel_for_nn") return (double(o) + 0.5) / a.scale;
  if (ctm == "tf_crop_and_resize")
    return a.out > 1 ? a.roi_start * (in - 1) + double(o) * (a.roi_end - a.roi_start) * (in - 1) / (out - 1)
                     : 0.5 * (a.roi_start + a.roi_end) * (in - 1);
  return std::nullopt;
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

// Index and weight tables ([out, taps]) and the crop's outside value ([out]) of one axis.
struct Tables {
  NDArray index, weight, bias;
  bool outside = false;
};

Tables tables(Importer& im, const onnx::NodeProto& n, const AxisResize& a, const ResizeRules& r, DataType t) {
  int64_t taps = r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  Tables tb{folded_const({taps, a.out}, DataType::Int(32), im.where(n)), folded_const({taps, a.out}, t, im.where(n)),
            folded_const({a.out}, t, im.where(n))};
  for (int64_t o = 0; o < a.out; ++o) {
    std::optional<double> xs = source_coordinate(r.ctm, o, a);
    if (!xs) im.unsupported(n, "coordinate_transformation_mode '" + r.ctm + "' is not supported");
    double x = *xs;
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

// The order in which emit_resize resamples the axes (the modes are separable: any order gives the
// same values up to rounding). Kernels vectorize along the innermost axis, where every output reads
// its taps through the index table (gathers); along any other axis a row of outputs reads whole
// input rows. So the innermost axis goes first when the others grow: its gathers then run on the
// smaller tensor (DeepLabV3's 14x14 -> 224x224 logits: 16x fewer points gathered).
std::vector<size_t> resample_order(const std::vector<AxisResize>& axes) {
  std::vector<size_t> order(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) order[d] = d;
  double in_others = 1, out_others = 1;
  for (size_t d = 0; d + 1 < axes.size(); ++d) in_others *= double(axes[d].in), out_others *= double(axes[d].out);
  if (!axes.empty() && in_others < out_others) std::rotate(order.begin(), order.end() - 1, order.end());
  return order;
}

// Resizes x (any rank) to `out`: one resample_axis per axis whose size or scale changes.
void emit_resize(Importer& im, const onnx::NodeProto& n, int x, const std::vector<AxisResize>& axes,
                 const ResizeRules& r) {
  DataType t = im.type(x).dtype;
  if (!t.is_float()) im.unsupported(n, "only floating-point data is supported, is " + im.type(x).str());
  for (size_t d : resample_order(axes)) {
    const AxisResize& a = axes[d];
    if (a.in == a.out && a.scale == 1.0 && r.ctm != "tf_crop_and_resize") continue;
    Tables tb = tables(im, n, a, r, t);
    std::string suffix = "_axis" + std::to_string(d);
    std::vector<int> in{x, im.add_const(n, tb.index, suffix + "_index"),
                        im.add_const(n, tb.weight, suffix + "_weight")};
    if (tb.outside) in.push_back(im.add_const(n, tb.bias, suffix + "_outside"));
    x = im.add(n, "resample_axis", in, Attrs().set("axis", int64_t(d)), suffix);
  }
  im.output(n, im.add(n, "identity", {x}));
}

ResizeRules rules(Importer& im, const onnx::NodeProto& n) {
  ResizeRules r{im.attr_string(n, "mode", "nearest"),
                im.attr_string(n, "coordinate_transformation_mode", "half_pixel"),
                im.attr_string(n, "nearest_mode", "round_prefer_floor"),
                im.attr_float(n, "cubic_coeff_a", -0.75),
                im.attr_float(n, "extrapolation_value", 0.0),
                im.attr_int(n, "exclude_outside", 0) != 0};
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic")
    im.unsupported(n, "mode '" + r.mode + "' is not one of nearest, linear, cubic");
  for (const char* rule : {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"})
    if (r.nearest == rule) return r;
  im.unsupported(n, "nearest_mode '" + r.nearest + "' is not supported");
}

void import_resize(Importer& im, const onnx::NodeProto& n) {
  ResizeRules r = rules(im, n);
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  size_t rank = in.size();
  std::vector<AxisResize> axes;
  for (int64_t d : in) axes.push_back({d, d, 1.0, 0.0, 1.0});
  if (r.ctm == "tf_crop_and_resize") {
    const NDArray& roi = im.constant(n, 1);
    if (roi.numel() != int64_t(2 * rank)) im.unsupported(n, "roi must have 2 values per dimension");
    for (size_t d = 0; d < rank; ++d) {
      axes[d].roi_start = roi.get_as_double(int64_t(d));
      axes[d].roi_end = roi.get_as_double(int64_t(d + rank));
    }
  }
  if (im.has_input(n, 3)) {
    std::vector<int64_t> sizes = im.const_ints(n, 3);
    if (sizes.size() != rank) im.unsupported(n, "sizes must have one value per dimension");
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 1 || sizes[d] > kMaxElements)
        im.unsupported(n,
                       "size " + std::to_string(sizes[d]) + " of dimension " + std::to_string(d) + " is out of range");
      axes[d].out = sizes[d];
      axes[d].scale = double(sizes[d]) / double(in[d]);
    }
  } else if (im.has_input(n, 2) && im.constant(n, 2).numel() > 0) {
    const NDArray& s = im.constant(n, 2);
    if (s.numel() != int64_t(rank)) im.unsupported(n, "scales must have one value per dimension");
    for (size_t d = 0; d < rank; ++d) {
      double scale = s.get_as_double(int64_t(d)), size = std::floor(double(in[d]) * scale);
      if (!(scale > 0) || !(size >= 1 && size <= double(kMaxElements)))
        im.unsupported(n, "scale " + std::to_string(scale) + " of dimension " + std::to_string(d) +
                              " is not a positive, finite factor");
      axes[d].out = static_cast<int64_t>(size);
      axes[d].scale = scale;
    }
  } else {
    im.unsupported(n, "needs scales or sizes");
  }
  emit_resize(im, n, x, axes, r);
}

// Upsample (opset 9): Resize with scales and the asymmetric coordinates of its time.
void import_upsample(Importer& im, const onnx::NodeProto& n) {
  ResizeRules r = rules(im, n);
  r.ctm = "asymmetric";
  r.nearest = "floor";
  if (r.mode == "cubic") im.unsupported(n, "mode 'cubic' is not one of Upsample's (nearest, linear)");
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  const NDArray& s = im.constant(n, 1);
  if (s.numel() != int64_t(in.size())) im.unsupported(n, "scales must have one value per dimension");
  std::vector<AxisResize> axes;
  for (size_t d = 0; d < in.size(); ++d) {
    double scale = s.get_as_double(int64_t(d)), size = std::floor(double(in[d]) * scale);
    if (!(scale >= 1) || !(size <= double(kMaxElements))) im.unsupported(n, "scales must be finite and at least 1");
    axes.push_back({in[d], static_cast<int64_t>(size), scale, 0.0, 1.0});
  }
  emit_resize(im, n, x, axes, r);
}

}  // namespace

void add_resize_handlers(HandlerTable& t) {
  t["Resize"] = {{"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                  "extrapolation_value"},
                 import_resize};
  t["Upsample"] = {{"mode"}, import_upsample, 9};
}

}  // namespace loom::frontend::onnx_detail
