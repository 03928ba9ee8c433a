// GPU schedule hooks (OpDef::schedule_cuda): what a fused group anchored by the operator gets
// instead of ops::schedule_cuda_generic.
#include "loom/ops/cuda_schedules.h"
#include "loom/ops/layers.h"
#include "op_schedules.h"

namespace loom::graph {

// A convolution with its epilogue: the register-tiled direct schedule when the output channels
// allow a tile, else the generic one.
void schedule_conv2d_cuda(const CudaScheduleContext& c) {
  ir::Tensor conv;
  for (const ir::OpRef& op : ir::topo_sort({c.out}))
    if (op->tag == "conv2d" && op->is_compute()) conv = ir::Tensor(op);
  // Output channels per thread: the most that still leaves about 256 threads per multiprocessor
  // (a layer with few outputs, like ResNet's last at batch 1, keeps one per thread).
  int channels = 0;
  if (conv.defined() && conv.ndim() == 4 && c.out.ndim() == 4) {
    int64_t outputs = 1, wanted = int64_t(c.cuda.multiprocessors) * 256;
    for (int d = 0; d < 4; ++d) outputs *= ops::const_dim(conv, d);
    for (int ch : {8, 4, 2, 1})
      if (ops::const_dim(conv, 1) % ch == 0 && (outputs / ch >= wanted || ch == 1)) {
        channels = ch;
        break;
      }
  }
  if (channels)
    ops::schedule_conv2d_cuda(c.s, conv, c.out, channels, 128);
  else
    ops::schedule_cuda_generic(c.s, 256);
}

}  // namespace loom::graph
