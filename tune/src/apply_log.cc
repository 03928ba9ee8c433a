#include "loom/tune/apply_log.h"

#include <set>

#include "loom/ops/accel_schedules.h"
#include "loom/ops/accel_target.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"

namespace loom::tune {

std::unique_ptr<Template> conv_kernel_template(const graph::ConvKernelKey& key, const codegen::TargetInfo& target) {
  if (key.winograd) return make_conv2d_winograd_template(key.layer, key.block, int(key.winograd), target);
  return make_conv2d_nchwc_template(key.layer, key.block, target, int(key.int8_group));
}

std::function<std::optional<ops::NchwcConvTile>(const graph::ConvKernelKey&)> conv_tiles_from_log(
    std::shared_ptr<const TuningLog> log, std::shared_ptr<LogLookups> lookups) {
  codegen::TargetInfo info = codegen::target_info();
  std::string target = target_key(info, runtime::num_threads());
  lookups->target = target;
  return [log, lookups, info, target](const graph::ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    ++lookups->looked_up;
    // The template says what `loom tune` logged this kernel as (op and shape).
    auto t = conv_kernel_template(k, info);
    auto c = log->best(t->op(), t->shape(), target);
    if (!c) {
      for (const std::string& other : log->targets(t->op(), t->shape())) lookups->other_targets.insert(other);
      return std::nullopt;
    }
    ++lookups->found;
    try {
      ops::NchwcConvTile tile{knob(*c, "channel_blocks"), knob(*c, "x_block")};
      if (k.winograd) tile.fused_rows = knob(*c, "fused_rows");
      return tile;
    } catch (const ConfigError& e) {
      LOOM_THROW(ConfigError, "tuning log '", log->path(), "': a ", t->op(), " entry: ", e.what());
    }
  };
}

Conv2dShape accel_conv_shape(const ops::ConvShape& c, const accel::AccelConfig& config) {
  if (c.out_h != c.out_w || c.kernel_h != c.kernel_w)
    LOOM_THROW(ShapeError, "accelerator conv ", c.out_h, "x", c.out_w, " with a ", c.kernel_h, "x", c.kernel_w,
               " kernel: the tuner takes square ones");
  Conv2dShape s;
  s.in_channels = c.ic_blocks * config.block_in;
  s.out_channels = c.oc_blocks * config.block_out;
  s.kernel = c.kernel_h;
  s.stride = c.stride;
  s.pad = c.kernel_h / 2;
  s.height = s.width = (c.out_h - 1) * c.stride + c.kernel_h - 2 * s.pad;
  return s;
}

std::unique_ptr<Template> accel_conv_template(const ops::ConvShape& c, const accel::AccelConfig& config) {
  return make_accel_conv2d_template(accel_conv_shape(c, config), config, "rtl");
}

std::function<std::optional<ops::AccelConvTiling>(const ops::ConvShape&)> accel_conv_tilings_from_log(
    std::shared_ptr<const TuningLog> log, const accel::AccelConfig& config, std::shared_ptr<LogLookups> lookups) {
  std::string target = accel_target_key(config, "rtl");
  const ops::AccelLimits limits = ops::accel_target(config).limits;
  return [log, lookups, target, limits](const ops::ConvShape& c) -> std::optional<ops::AccelConvTiling> {
    ++lookups->looked_up;
    auto found =
        log->best("accel_conv2d",
                  accel_conv_key(c.out_h, c.out_w, c.oc_blocks, c.ic_blocks, c.kernel_h, c.kernel_w, c.stride), target);
    if (!found) return std::nullopt;
    ops::AccelConvTiling t;
    try {
      t = accel_conv_tiling(*found);
    } catch (const ConfigError& e) {
      LOOM_THROW(ConfigError, "tuning log '", log->path(), "': an accel_conv2d entry: ", e.what());
    }
    // The log's tilings are tuned on the plain layer; one in passes of narrow digits or with
    // per-channel shifts needs more entries, and takes the tiling only where it still fits.
    if (c.weight_passes > 1 || c.channel_shifts) {
      try {
        ops::check_conv_tiling(c, t, limits);
      } catch (const ScheduleError&) {
        return std::nullopt;
      }
    }
    ++lookups->found;
    return t;
  };
}

LogUse apply_log(graph::BuildOptions& options, std::shared_ptr<const TuningLog> log) {
  LogUse use;
  options.conv_tile = conv_tiles_from_log(log, use.cpu);
  if (options.accel) options.accel_conv_tiling = accel_conv_tilings_from_log(log, *options.accel, use.accel);
  return use;
}

std::vector<graph::ConvKernelKey> model_conv_kernels(graph::Graph model) {
  std::vector<graph::ConvKernelKey> keys;
  std::set<std::pair<std::string, std::vector<int64_t>>> seen;  // op and shape: what the log is keyed by
  codegen::TargetInfo target = codegen::target_info();
  graph::BuildOptions bo;
  bo.conv_tile = [&](const graph::ConvKernelKey& k) -> std::optional<ops::NchwcConvTile> {
    auto t = conv_kernel_template(k, target);
    if (seen.insert({t->op(), t->shape()}).second) keys.push_back(k);
    return std::nullopt;
  };
  graph::build(std::move(model), bo);
  return keys;
}

std::vector<ops::ConvShape> model_accel_convs(graph::Graph model, const accel::AccelConfig& config) {
  std::vector<ops::ConvShape> shapes;
  std::set<std::vector<int64_t>> seen;
  graph::BuildOptions bo;
  bo.accel = config;
  bo.accel_conv_tiling = [&](const ops::ConvShape& c) -> std::optional<ops::AccelConvTiling> {
    if (seen.insert(accel_conv_key(c.out_h, c.out_w, c.oc_blocks, c.ic_blocks, c.kernel_h, c.kernel_w, c.stride))
            .second)
      shapes.push_back(c);
    return std::nullopt;
  };
  graph::build(std::move(model), bo);
  return shapes;
}

}  // namespace loom::tune
