// Internal to loom_ops: finding a stage of an operator by its tag, as the schedules do.
#pragma once
#include <string>

#include "loom/ir/tensor.h"

namespace loom::ops::detail {

// The input of t's operation tagged `tag` (e.g. "pack", "pad"); undefined if there is none.
inline ir::Tensor input_with_tag(const ir::Tensor& t, const std::string& tag) {
  for (const ir::Tensor& in : t.op()->input_tensors())
    if (in.op()->tag == tag) return in;
  return ir::Tensor();
}

}  // namespace loom::ops::detail
