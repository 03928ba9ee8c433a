// graph::build: the graph passes, fusion and the memory plan, then the three steps of
// build_steps.h (plan values, compile kernels, serialize).
#include "loom/graph/build.h"

#include <chrono>

#include "build_steps.h"

namespace loom::graph {

BuildResult build(Graph g, const BuildOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& m) {
    if (options.progress) options.progress(m);
  };
  codegen::TargetInfo target = codegen::target_info(options.llvm);
  PipelineOptions po = options.pipeline;
  po.layout.vector_lanes = target.float32_lanes();
  if (options.cuda) {
    if (options.accel) LOOM_THROW(ConfigError, "a build targets either the accelerator or CUDA, not both");
    po.layout.blocked_activations = false;  // the CPU's NCHWc blocking is no GPU layout
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
  r.memory = plan_memory(g, r.fusion);

  Placement placement = place_groups(g, r.fusion);
  ValuePlan plan = plan_values(g, r.fusion, r.memory, placement, options);
  plan.exec.target = target.cpu;
  CompiledKernels kernels = compile_kernels(g, r.fusion, placement, plan, target, options);
  r.kernels = std::move(kernels.reports);
  if (options.cuda)
    progress("compiling " + std::to_string(kernels.cuda_funcs.size()) + " CUDA kernels with NVRTC");
  else
    progress("compiling " + std::to_string(kernels.funcs.size()) + " kernels with LLVM");
  r.file = serialize(g, plan, kernels, options);
  r.cuda_funcs = std::move(kernels.cuda_funcs);
  r.executor_graph = std::move(plan.exec);
  r.graph = std::move(g);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace loom::graph
