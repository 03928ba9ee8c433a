// Resizing by ONNX's Resize rules as graph nodes: every resized axis is resampled on its own (the
// modes are separable), each output position reading a few input positions with weights computed
// here, at build time, by the coordinate transformation (half_pixel, pytorch_half_pixel,
// align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize), the nearest rounding, the
// linear or Keys' cubic taps, exclude_outside and the crop's extrapolation value. The ONNX
// importer's Resize and Upsample and from_torch's interpolation build through it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loom/frontend/node_builder.h"

namespace loom::frontend {

struct ResizeAxis {
  int64_t in = 1, out = 1;
  double scale = 1;                   // out / in, or the factor given (the coordinates divide by it)
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize's region, in [0, 1]
};

struct ResizeRules {
  std::string mode = "nearest";                // nearest, linear, cubic
  std::string ctm = "half_pixel";              // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // floor, ceil, round_prefer_floor, round_prefer_ceil
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// "" when the rules are ones build_resize follows, else what is not (e.g. "mode 'area' is not one
// of nearest, linear, cubic"), for the caller's error.
std::string unsupported_resize(const ResizeRules& rules);

// Resizes node `x` (floating-point `dtype`, any rank, one ResizeAxis per axis) by `rules`: one
// resample_axis node per axis whose size or scale changes; returns the last node (`x` when none
// does). ModelError for rules unsupported_resize refuses or a non-float dtype.
int build_resize(const NodeBuilder& b, int x, DataType dtype, const std::vector<ResizeAxis>& axes,
                 const ResizeRules& rules);

}  // namespace loom::frontend
