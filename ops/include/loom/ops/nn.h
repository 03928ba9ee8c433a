// Operator library: compute definitions of common neural-network operators as tensor
// expressions. Schedules for them live in cpu_schedules.h (and, later, accelerator schedules).
#pragma once
#include "loom/ir/tensor.h"

namespace loom::ops {

using ir::Tensor;

// C[i, j] = sum_k A[i, k] * B[k, j]
Tensor matmul(const Tensor& A, const Tensor& B, const std::string& name = "C");
// The same product reading B through a packed copy Bp[j / nr, k, j % nr], so the innermost
// loop over j walks contiguous memory. Returns C; Bp is C's input 1 when nr divides N, else C
// copies the first N columns of the product over whole panels (tag "matmul_panels"), which reads Bp.
Tensor matmul_packed(const Tensor& A, const Tensor& B, int nr, const std::string& name = "C");
// The product for B with one column (N = 1) as dot products vectorized along K: partial sums
// P[i, l] = sum_ko A[i, ko*lanes + l] * B[ko*lanes + l, 0] (contiguous rows of A), then
// C[i, 0] = sum_l P[i, l]. K must be a multiple of `lanes`. Returns C; P is C's input 0.
Tensor matmul_dot_k(const Tensor& A, const Tensor& B, int lanes, const std::string& name = "C");

// Zero padding of the two innermost dimensions of an NCHW tensor.
Tensor pad_nchw(const Tensor& X, int pad, const std::string& name = "pad");
// NCHW conv2d, weights OIHW, square kernel/stride/padding; pads with a separate stage.
Tensor conv2d_nchw(const Tensor& X, const Tensor& W, int stride, int pad, const std::string& name = "conv");
// conv2d_nchw reading weights through a packed copy Wp[f / oc_block, c, ky, kx, f % oc_block]
// (vectors over output channels are contiguous). Returns Y; the pad stage is input 0 of Y when
// pad > 0, Wp is the other input.
Tensor conv2d_nchw_packed(const Tensor& X, const Tensor& W, int stride, int pad, int oc_block,
                          const std::string& name = "conv");
Tensor max_pool2d(const Tensor& X, int kernel, int stride, const std::string& name = "pool");  // CHW or NCHW
Tensor relu(const Tensor& X, const std::string& name = "relu");
// Row-wise softmax over the last axis of a 2-D tensor (max, exp, sum, divide stages).
Tensor softmax(const Tensor& X, const std::string& name = "softmax");

int64_t const_dim(const Tensor& t, int d);  // throws ShapeError naming the tensor if symbolic

}  // namespace loom::ops
