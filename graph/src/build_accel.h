// Internal to loom_graph: compiling the accelerator kernels of a model (accel_conv2d groups of the
// accelerator partition) into one linked accelerator image, in which every value an accelerator
// kernel reads or writes has a place.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "loom/accel/linker.h"
#include "loom/graph/passes.h"
#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "op_schedules.h"

namespace loom::graph {

class AccelBuild {
 public:
  // `conv_tiling` (may be empty): BuildOptions::accel_conv_tiling.
  AccelBuild(const accel::AccelConfig& config, AccelConvTilingFn conv_tiling)
      : config_(config),
        target_(ops::accel_target(config, /*bounded=*/true)),
        linker_(config),
        conv_tiling_(std::move(conv_tiling)) {}
  // The image offset of a value (reserved on first use; constants keep their contents, packed
  // when the config holds them narrower than their dtype).
  uint64_t place(const Graph& g, int id);
  // Bits per element of a value's copy in the image when narrower than its dtype (the config's
  // inp_bits, wgt_bits, acc_bits or out_bits for the accelerator operands it is), else 0.
  int narrow_bits(const Graph& g, int id) const;
  bool placed(int id) const { return offset_.count(id) != 0; }
  // Schedules, lowers and emits one accelerator group as its own stream; returns the stream index.
  size_t compile_group(const Graph& g, const FusedGroup& grp, const std::string& name);
  runtime::AccelImage finish() { return linker_.finish(); }

 private:
  accel::AccelConfig config_;
  ops::AccelTarget target_;
  accel::ImageLinker linker_;
  AccelConvTilingFn conv_tiling_;
  std::map<int, uint64_t> offset_;
  mutable std::map<int, int> narrow_bits_;  // narrow_bits by value (each scans the graph's accelerator operators)
};

}  // namespace loom::graph
