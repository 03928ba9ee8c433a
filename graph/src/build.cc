// graph::build: the targets checked against the graph, the graph passes, fusion and the memory
// plan, then the four steps of build_steps.h (place groups, plan values, compile kernels, serialize).
#include "loom/graph/build.h"

#include <algorithm>
#include <chrono>

#include "build_steps.h"
#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {
std::string widths_text(const std::vector<int>& widths) {
  std::string t;
  for (size_t k = 0; k < widths.size(); ++k)
    t += (k ? (k + 1 == widths.size() ? " or " : ", ") : "") + std::to_string(widths[k]);
  return t;
}

const char* kAccelInt8 = "the accelerator runs int8 layers";
const char* kAccelShifts =
    "the accelerator requantizes with shifts: quantize with power-of-two scales (per tensor or per channel, not "
    "per_channel's fixed-point multipliers)";
}  // namespace

void check_targets(const BuildOptions& options, const QuantizeOptions* quantize) {
  if (!options.accel) return;
  if (!quantize || quantize->simulated)
    LOOM_THROW(ConfigError, kAccelInt8, ": it needs int8 quantization (graph::quantize; loom compile --quantize int8)");
  if (quantize->per_channel) LOOM_THROW(ConfigError, "per-channel scales are for the CPU: ", kAccelShifts);
}

void follow_targets(QuantizeOptions& quantize, const BuildOptions& options) {
  if (!options.accel) return;
  quantize.weight_bits = options.accel->wgt_bits;
  quantize.activation_bits = options.accel->inp_bits;
  quantize.weight_digit_bits = options.accel->wgt_bits < 8 ? options.accel->wgt_bits : 0;
  const std::vector<int> widths = options.accel->weight_widths();
  for (const auto& [layer, bits] : quantize.layer_weight_bits)
    if (std::find(widths.begin(), widths.end(), bits) == widths.end())
      LOOM_THROW(ConfigError, "layer '", layer, "' is given ", bits, "-bit weights; config '", options.accel->name,
                 "' (", options.accel->precision(), ") runs weights of ", widths_text(widths), " bits");
  if (quantize.activation_bits < 4)
    LOOM_THROW(ConfigError, "config '", options.accel->name, "' (", options.accel->precision(),
               "): the quantizer realizes 4- and 8-bit activations, not ", quantize.activation_bits, "-bit");
}

void follow_targets(QuantizeOptions& quantize, const BuildOptions& options, const std::string& precision,
                    const std::string& what) {
  follow_targets(quantize, options);
  if (precision.empty()) return;
  QuantizeOptions asked = quantize;
  asked.set_precision(precision);
  // Layers wider than the precision's weights are sums of its digits, as an accelerator at that
  // precision runs them in passes: the CPU model equals the accelerator's.
  asked.weight_digit_bits = asked.weight_bits < 8 ? asked.weight_bits : 0;
  if (options.accel && asked.precision() != quantize.precision())
    LOOM_THROW(ConfigError, what, " ", asked.precision(), ": accelerator config '", options.accel->name, "' is ",
               quantize.precision(), " (", options.accel->precision(),
               "); the config decides the accelerator's widths");
  quantize = asked;
}

void check_targets(const Graph& g, const BuildOptions& options) {
  if (!options.accel) return;
  for (const Node& n : g.nodes) {
    if (!n.is_op()) continue;
    if (n.op == "requantize_channel" && !channel_shifts(g, n))
      LOOM_THROW(ConfigError, "node '", n.name,
                 "' requantizes per output channel by multipliers that are not powers "
                 "of two; ",
                 kAccelShifts);
    if (n.op == "fake_quantize")
      LOOM_THROW(ConfigError, "node '", n.name, "' is simulated int8 (fake_quantize); ", kAccelInt8,
                 ": quantize to int8 operators (QuantizeOptions::simulated = false)");
  }
}

BuildResult build(Graph g, const BuildOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& m) {
    if (options.progress) options.progress(m);
  };
  codegen::TargetInfo target = codegen::target_info(options.llvm);
  PipelineOptions po = options.pipeline;
  po.layout.vector_lanes = target.float32_lanes();
  po.layout.int8_input_offset = target.int8_dot;
  check_targets(g, options);
  if (options.cuda) {
    // The CPU's NCHWc blocking is no GPU layout; CPU kernels of a GPU build read NCHW too, so no
    // layout change sits between devices.
    po.layout.blocked_activations = false;
    // The CUDA executor places values at their storage offsets too, but no GPU has run an in-place
    // concat yet (the grid-interpreter tests give every value its own array).
    po.concat_in_place = false;
  }
  BuildResult r;
  po.accel = options.accel;
  po.accel_report = &r.accel_report;
  progress("optimizing the graph (" + std::to_string(g.nodes.size()) + " nodes)");
  const std::vector<std::string> output_names = g.output_names();
  optimize(g, po);
  // An output that no kernel computes (an input or a constant) gets a copy kernel.
  for (int& o : g.outputs)
    if (!g.node(o).is_op()) o = g.add_op("identity", g.unique_name(g.node(o).name + "_out"), {o});
  g.name_outputs(output_names);
  infer_types(g);
  r.fusion = fuse_ops(g);
  // Views share storage as in-place concats do (not yet on a GPU build: see above).
  reshape_in_place(g, r.fusion, po.concat_in_place);
  r.memory = plan_memory(g, r.fusion);

  // The accelerator image's build, when the accelerator partition made accelerator operators.
  std::unique_ptr<AccelBuild> accel;
  for (const Node& n : g.nodes)
    if (!accel && options.accel && n.is_op() && op_def(n.op).device == runtime::KernelDevice::Accel)
      accel = std::make_unique<AccelBuild>(*options.accel, options.accel_conv_tiling);
  KernelBackends backends = make_backends(target, options, accel.get());
  Placement placement = place_groups(g, r.fusion, backends, options);
  r.cpu_fallback = placement.cpu_fallback;
  ValuePlan plan = plan_values(g, r.fusion, r.memory, placement, accel.get());
  plan.exec.target = target.cpu;
  plan.exec.target_triple = target.triple;
  plan.exec.target_features = target.isa_features;
  r.kernels = compile_kernels(g, r.fusion, placement, plan, backends, options);
  if (backends.cuda && !backends.cuda->reports().empty())
    progress("compiling " + std::to_string(backends.cuda->reports().size()) + " CUDA kernels with NVRTC");
  if (!backends.cpu->reports().empty())
    progress("compiling " + std::to_string(backends.cpu->reports().size()) + " kernels with LLVM");
  r.file = serialize(g, plan, backends);
  if (backends.cuda) r.cuda_funcs = backends.cuda->funcs();
  r.executor_graph = std::move(plan.exec);
  r.graph = std::move(g);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace loom::graph
