// The accelerator templates: an int8 conv2d scheduled for the GEMM-block accelerator
// (ops::schedule_conv2d_int8_accel), measured by the cycles of one run on a cycle-counting
// accelerator backend (the RTL simulation) instead of by wall-clock time.
#include <algorithm>
#include <cmath>

#include "loom/codegen/accel.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/sim/backends.h"
#include "loom/tune/template.h"

namespace loom::tune {

std::vector<int64_t> accel_conv_key(int out_h, int out_w, int oc_blocks, int ic_blocks, int kernel_h, int kernel_w,
                                    int stride) {
  return {out_h, out_w, oc_blocks, ic_blocks, kernel_h, kernel_w, stride};
}

std::string accel_target_key(const accel::AccelConfig& config, const std::string& device) {
  return "accel=" + config.name + " device=" + device;
}

namespace {

// The accelerator templates take square layers of batch 1 (ops::AccelOpSpec's size).
void check_square(const Conv2dShape& s) {
  if (s.height != s.width || s.batch != 1)
    LOOM_THROW(ShapeError, "accel_conv2d template: the layer must be square with batch 1, got batch ", s.batch, ", ",
               s.height, "x", s.width);
}

}  // namespace

ops::AccelConvTiling accel_conv_tiling(const Config& c) {
  return {knob(c, "h_block"), knob(c, "w_block"), knob(c, "oc_blocks"), knob(c, "virtual_threads")};
}

ops::AccelOperator accel_conv2d_operator(const Conv2dShape& s, const accel::AccelConfig& config, const Config& c) {
  check_square(s);
  ops::AccelOpSpec spec;
  spec.channels = int(s.in_channels);
  spec.out_channels = int(s.out_channels);
  spec.size = int(s.height);
  spec.kernel = int(s.kernel);
  spec.stride = int(s.stride);
  spec.pad = int(s.pad);
  spec.conv_tiling = accel_conv_tiling(c);
  spec.virtual_threads = spec.conv_tiling->virtual_threads;
  return ops::make_accel_operator(spec, ops::accel_target(config), "kernel");
}

namespace {

class AccelConv2dTemplate : public Template {
 public:
  AccelConv2dTemplate(const Conv2dShape& s, accel::AccelConfig config, std::string device)
      : s_(s), cfg_(std::move(config)), device_(std::move(device)), limits_(ops::accel_target(cfg_).limits) {
    check_square(s);
    if (s.in_channels % cfg_.block_in || s.out_channels % cfg_.block_out)
      LOOM_THROW(ShapeError, "accel_conv2d template: ", s.in_channels, " -> ", s.out_channels,
                 " channels are not whole blocks of ", cfg_.block_in, " -> ", cfg_.block_out, " (config '", cfg_.name,
                 "')");
    if (s.kernel < 1 || s.stride < 1 || s.pad < 0 || s.out_height() < 1)
      LOOM_THROW(ShapeError, "accel_conv2d template: size ", s.height, ", kernel ", s.kernel, ", stride ", s.stride,
                 ", pad ", s.pad, " give no output");
    // The shape compiled models tile, bias included (it takes accumulator entries), so a tuned
    // tiling is valid for the layer in a model too.
    const int out = int(s.out_height());
    conv_ = ops::ConvShape{out,
                           out,
                           int(s.out_channels / cfg_.block_out),
                           int(s.in_channels / cfg_.block_in),
                           int(s.kernel),
                           int(s.kernel),
                           int(s.stride),
                           true};
    sim::register_backends();
  }
  Measure measure() const override { return Measure::Cycles; }
  std::string op() const override { return "accel_conv2d"; }
  std::vector<int64_t> shape() const override {
    return accel_conv_key(conv_.out_h, conv_.out_w, conv_.oc_blocks, conv_.ic_blocks, conv_.kernel_h, conv_.kernel_w,
                          conv_.stride);
  }
  std::vector<Knob> knobs() const override {
    return {{"h_block", divisors(conv_.out_h, conv_.out_h)},
            {"w_block", divisors(conv_.out_w, conv_.out_w)},
            {"oc_blocks", divisors(conv_.oc_blocks, conv_.oc_blocks)},
            {"virtual_threads", {1, 2}}};
  }
  bool valid(const Config& c) const override {
    try {
      ops::check_conv_tiling(conv_, accel_conv_tiling(c), limits_);
      return true;
    } catch (const ScheduleError&) {
      return false;
    } catch (const ConfigError&) {  // a knob missing from a hand-edited log
      return false;
    }
  }
  Config default_config() const override {
    // What a compiled model uses without a tuning log (graph/build_accel.cc).
    ops::AccelConvTiling t = ops::choose_conv_tiling(conv_, 2, limits_);
    return {{"h_block", t.h_block},
            {"w_block", t.w_block},
            {"oc_blocks", t.oc_blocks},
            {"virtual_threads", t.virtual_threads}};
  }
  std::vector<float> features(const Config& c) const override {
    ops::AccelConvTiling t = accel_conv_tiling(c);
    double in_h = (t.h_block - 1) * conv_.stride + conv_.kernel_h,
           in_w = (t.w_block - 1) * conv_.stride + conv_.kernel_w;
    double tiles = double(conv_.out_h / t.h_block) * (conv_.out_w / t.w_block) * (conv_.oc_blocks / t.oc_blocks);
    double gemm_per_load =
        double(t.oc_blocks) * t.h_block * t.w_block * conv_.kernel_h * conv_.kernel_w;  // GEMM steps per input block
    return {float(t.h_block),
            float(t.w_block),
            float(t.oc_blocks),
            float(t.virtual_threads),
            float(std::log2(tiles * conv_.ic_blocks)),     // instruction groups
            float(in_h * in_w / (t.h_block * t.w_block)),  // input entries loaded per output entry (halo)
            float(double(conv_.out_h / t.h_block) * (conv_.out_w / t.w_block)),  // weight reloads
            float(gemm_per_load /
                  (in_h * in_w + 16.0 * t.oc_blocks * conv_.kernel_h * conv_.kernel_w)),  // compute per loaded beat
            float(double(t.oc_blocks) * t.h_block * t.w_block * t.virtual_threads / double(limits_.acc))};
  }
  double flops() const override {
    return 2.0 * cfg_.batch * double(s_.out_channels) * s_.in_channels * s_.kernel * s_.kernel * conv_.out_h *
           conv_.out_w;
  }
  Simulated simulate(const Config& c, uint64_t seed) const override {
    ops::AccelOperator a = accel_conv2d_operator(s_, cfg_, c);
    codegen::AccelModule m = codegen::build_accel(a.func, cfg_);
    std::vector<NDArray> args = a.random_args(seed);
    std::unique_ptr<AccelDevice> dev = make_accel_device(device_, cfg_.to_json());
    codegen::AccelRunStats stats = m.run(*dev, args);
    if (stats.cycles == 0)
      LOOM_THROW(DeviceError, "accelerator backend '", device_,
                 "' counts no cycles: tune on a cycle-accurate backend (rtl)");
    return {stats.cycles, args.back()};
  }

 private:
  Conv2dShape s_;
  accel::AccelConfig cfg_;
  std::string device_;
  ops::AccelLimits limits_;
  ops::ConvShape conv_;
};

}  // namespace

std::unique_ptr<Template> make_accel_conv2d_template(const Conv2dShape& shape, const accel::AccelConfig& config,
                                                     const std::string& device) {
  return std::make_unique<AccelConv2dTemplate>(shape, config, device);
}

}  // namespace loom::tune
