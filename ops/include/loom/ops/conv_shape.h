// The shape of a 2-D convolution layer, one type for ops, graph (tuning keys) and tune
// (templates), and the one formula for a sliding window's output extent.
#pragma once
#include <cstdint>

namespace loom::ops {

// Output extent of a sliding window: floor (or ceil) of (in + pads - dilated kernel) / stride + 1;
// 0 when the window does not fit. ShapeError if it overflows.
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation = 1,
                   bool ceil_mode = false);

// NCHW input, square kernel, equal strides and pads on every side, no dilation or groups.
struct Conv2dLayer {
  int64_t batch = 1, in_channels = 64, height = 56, width = 56, out_channels = 64, kernel = 3, stride = 1, pad = 1;
  int64_t out_height() const { return window_out(height, kernel, stride, pad, pad); }
  int64_t out_width() const { return window_out(width, kernel, stride, pad, pad); }
  bool operator==(const Conv2dLayer&) const = default;
};

}  // namespace loom::ops
