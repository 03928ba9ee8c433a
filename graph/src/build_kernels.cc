#include <map>
#include <sstream>

#include "build_steps.h"
#include "loom/graph/layout.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"
#include "op_schedules.h"

namespace loom::graph {

namespace {

// Two groups with the same key compute the same function of their inputs.
std::string group_key(const Graph& g, const FusedGroup& grp) {
  std::ostringstream os;
  std::map<int, std::string> ref;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    ref[grp.inputs[k]] = "i" + std::to_string(k);
    os << "i" << k << ":" << g.type_of(grp.inputs[k]).str() << ";";
  }
  for (size_t j = 0; j < grp.nodes.size(); ++j) {
    const Node& n = g.node(grp.nodes[j]);
    os << "n" << j << "=" << n.op << "(";
    for (int in : n.inputs) os << ref[in] << ",";
    os << "){" << n.attrs.str() << "};";
    ref[grp.nodes[j]] = "n" + std::to_string(j);
  }
  return os.str();
}

// The group's nodes' operators or names joined by '+' ("conv2d+add+relu").
std::string joined(const Graph& g, const FusedGroup& grp, std::string Node::*field) {
  std::string s;
  for (int id : grp.nodes) s += (s.empty() ? "" : "+") + g.node(id).*field;
  return s;
}
std::string group_ops(const Graph& g, const FusedGroup& grp) { return joined(g, grp, &Node::op); }

// The group's tensor expressions: a placeholder per input, then its output (the function's arguments).
std::vector<ir::Tensor> group_tensors(const Graph& g, const FusedGroup& grp) {
  std::map<int, ir::Tensor> t;
  std::vector<ir::Tensor> args;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const TensorType& type = g.type_of(grp.inputs[k]);
    std::vector<ir::Expr> shape;
    for (int64_t d : type.shape) shape.push_back(ir::Expr(static_cast<int>(d)));
    args.push_back(ir::placeholder(shape, type.dtype, sanitize(g.node(grp.inputs[k]).name)));
    t[grp.inputs[k]] = args.back();
  }
  for (int id : grp.nodes) {
    const Node& n = g.node(id);
    std::vector<ir::Tensor> in;
    for (int i : n.inputs) in.push_back(t.at(i));
    t[id] = op_def(n.op).compute(n, in, sanitize(n.name));
  }
  ir::Tensor out = t.at(grp.output);
  args.push_back(out);
  return args;
}

ir::LoweredFunc lower_group(const Graph& g, const FusedGroup& grp, const std::string& name,
                            const codegen::TargetInfo& target, const BuildOptions& options) {
  std::vector<ir::Tensor> args = group_tensors(g, grp);
  ir::Tensor out = args.back();
  schedule::Schedule s({out});
  const Node& anchor = g.node(grp.anchor);
  const OpDef& def = op_def(anchor.op);
  if (def.schedule_cpu)
    def.schedule_cpu(CpuScheduleContext{g, anchor, s, out, target, options});
  else
    ops::schedule_generic_cpu(s, out, target.float32_lanes());
  schedule::LowerOptions lo;
  lo.min_parallel_work = options.min_parallel_work;
  lo.parallel_work_hints = options.parallel_work_hints;
  return schedule::lower(s, args, name, lo);
}

// The same group for a GPU: the generic CUDA schedule (ops/cuda_schedules.h), lowered for the GPU.
ir::LoweredFunc lower_group_cuda(const Graph& g, const FusedGroup& grp, const std::string& name,
                                 const codegen::cuda::CudaOptions& cuda) {
  std::vector<ir::Tensor> args = group_tensors(g, grp);
  ir::Tensor out = args.back();
  schedule::Schedule s({out});
  // A convolution (the reduction tagged "conv2d") with its epilogue gets the register-tiled direct
  // schedule when its output channels allow a tile; everything else the generic one.
  ir::Tensor conv;
  for (const ir::OpRef& op : ir::topo_sort({out}))
    if (op->tag == "conv2d" && op->is_compute()) conv = ir::Tensor(op);
  // Output channels per thread: the most that still leaves about 256 threads per multiprocessor
  // (a layer with few outputs, like ResNet's last at batch 1, keeps one per thread).
  int channels = 0;
  if (conv.defined() && conv.ndim() == 4 && out.ndim() == 4) {
    int64_t outputs = 1, wanted = int64_t(cuda.multiprocessors) * 256;
    for (int d = 0; d < 4; ++d) outputs *= ops::const_dim(conv, d);
    for (int c : {8, 4, 2, 1})
      if (ops::const_dim(conv, 1) % c == 0 && (outputs / c >= wanted || c == 1)) {
        channels = c;
        break;
      }
  }
  if (channels)
    ops::schedule_conv2d_cuda(s, conv, out, channels, 128);
  else
    ops::schedule_cuda_generic(s, 256);
  schedule::LowerOptions lo;
  lo.target_gpu = true;
  return schedule::lower(s, args, name, lo);
}

}  // namespace

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "n" + out;
  return out;
}

CompiledKernels compile_kernels(const Graph& g, const FusionPlan& fusion, const Placement& placement, ValuePlan& plan,
                                const codegen::TargetInfo& target, const BuildOptions& options) {
  auto progress = [&](size_t k, const std::string& what) {
    if (options.progress)
      options.progress("kernel " + std::to_string(k + 1) + "/" + std::to_string(fusion.groups.size()) + ": " + what);
  };
  CompiledKernels out;
  std::set<int> uploaded;
  std::map<std::string, size_t> report_of_key;  // identical CPU groups share one function
  for (size_t k = 0; k < fusion.groups.size(); ++k) {
    const FusedGroup& grp = fusion.groups[k];
    if (is_in_place_concat(g.node(grp.anchor))) continue;  // its inputs' kernels wrote it
    runtime::KernelCall call;
    for (int in : grp.inputs) call.args.push_back(plan.value_of.at(in));
    call.args.push_back(plan.value_of.at(grp.output));
    if (placement.on_accel[k]) {
      call.device = runtime::KernelDevice::Accel;
      call.node = g.node(grp.output).name;
      call.func = "a" + std::to_string(k) + "_" + sanitize(call.node);
      progress(k, "accelerator " + group_ops(g, grp));
      try {
        call.accel_stream = static_cast<int>(plan.accel->compile_group(g, grp, call.func));
      } catch (const Error& e) {
        LOOM_THROW(CodegenError, "accelerator kernel for node '", call.node, "': ", e.what());
      }
      out.reports.push_back({call.func, group_ops(g, grp), 1, true});
      // A host value goes to the device once, before its first accelerator reader.
      for (int in : grp.inputs)
        if (!g.node(in).is_constant() && !placement.accel_made.count(in) && uploaded.insert(in).second)
          call.upload.push_back(plan.value_of.at(in));
      if (placement.cpu_read.count(grp.output)) call.download.push_back(plan.value_of.at(grp.output));
    } else {
      auto [it, is_new] = report_of_key.emplace(group_key(g, grp), out.reports.size());
      const bool gpu = options.cuda.has_value();
      if (is_new) {
        std::string ops = group_ops(g, grp);
        auto& funcs = gpu ? out.cuda_funcs : out.funcs;
        std::string name = (gpu ? "g" : "k") + std::to_string(funcs.size()) + "_" + sanitize(ops);
        progress(k, ops);
        try {
          funcs.push_back(gpu ? lower_group_cuda(g, grp, name, *options.cuda)
                              : lower_group(g, grp, name, target, options));
        } catch (const Error& e) {
          LOOM_THROW(CodegenError, "kernel for node '", g.node(grp.output).name, "' (", ops, "): ", e.what());
        }
        out.reports.push_back({name, ops, 0});
      }
      KernelReport& rep = out.reports[it->second];
      ++rep.calls;
      call.device = gpu ? runtime::KernelDevice::Cuda : runtime::KernelDevice::CPU;
      call.node = joined(g, grp, &Node::name);
      call.func = rep.func;
    }
    plan.exec.kernels.push_back(std::move(call));
  }
  return out;
}

}  // namespace loom::graph
