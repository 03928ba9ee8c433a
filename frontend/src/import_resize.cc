// ONNX operator handlers: Resize (and the older Upsample), built by loom/frontend/resize.h.
#include <cmath>
#include <vector>

#include "loom/frontend/resize.h"
#include "onnx_importer.h"

namespace loom::frontend::onnx_detail {

namespace {

// Resizes x to `axes` by `r` (loom/frontend/resize.h), the tables as the node's constants.
void emit_resize(Importer& im, const onnx::NodeProto& n, int x, const std::vector<ResizeAxis>& axes,
                 const ResizeRules& r) {
  DataType t = im.type(x).dtype;
  if (!t.is_float()) im.unsupported(n, "only floating-point data is supported, is " + im.type(x).str());
  x = build_resize(im.builder(n), x, t, axes, r);
  im.output(n, im.add(n, "identity", {x}));
}

ResizeRules rules(Importer& im, const onnx::NodeProto& n) {
  ResizeRules r{im.attr_string(n, "mode", "nearest"),
                im.attr_string(n, "coordinate_transformation_mode", "half_pixel"),
                im.attr_string(n, "nearest_mode", "round_prefer_floor"),
                im.attr_float(n, "cubic_coeff_a", -0.75),
                im.attr_float(n, "extrapolation_value", 0.0),
                im.attr_int(n, "exclude_outside", 0) != 0};
  if (std::string why = unsupported_resize(r); !why.empty()) im.unsupported(n, why);
  return r;
}

void import_resize(Importer& im, const onnx::NodeProto& n) {
  ResizeRules r = rules(im, n);
  int x = im.input(n, 0);
  Shape in = im.type(x).shape;
  size_t rank = in.size();
  std::vector<ResizeAxis> axes;
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
  std::vector<ResizeAxis> axes;
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
