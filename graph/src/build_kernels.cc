#include <algorithm>
#include <map>
#include <sstream>

#include "build_accel.h"
#include "build_steps.h"
#include "kernel_backend.h"
#include "loom/graph/passes.h"
#include "loom/ir/buffer.h"
#include "loom/ir/op_count.h"
#include "loom/ir/printer.h"
#include "loom/ir/simplify.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"

namespace loom::graph {

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

namespace {
std::string joined(const Graph& g, const FusedGroup& grp, std::string Node::*field) {
  std::string s;
  for (int id : grp.nodes) s += (s.empty() ? "" : "+") + g.node(id).*field;
  return s;
}
}  // namespace

std::string group_ops(const Graph& g, const FusedGroup& grp) { return joined(g, grp, &Node::op); }
std::string group_names(const Graph& g, const FusedGroup& grp) { return joined(g, grp, &Node::name); }

std::vector<ir::Tensor> group_tensors(const Graph& g, const FusedGroup& grp) {
  ops::ShapeVarMaxima maxima(g.shape_var_maxima());  // operators' structure at the largest shape
  std::map<int, ir::Tensor> t;
  bool symbolic = false;  // whether any of the group's values has a symbolic dimension
  for (int id : grp.nodes) symbolic |= !g.node(id).type.is_static();
  std::vector<ir::Tensor> args;
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const TensorType& type = g.type_of(grp.inputs[k]);
    symbolic |= !type.is_static();
    std::vector<ir::Expr> shape;
    for (size_t d = 0; d < type.shape.size(); ++d)
      shape.push_back(type.dims.empty() ? ir::Expr(static_cast<int>(type.shape[d]))
                                        : ops::shape_var_extent(type.dims[d]));
    args.push_back(ir::placeholder(shape, type.dtype, sanitize(g.node(grp.inputs[k]).name)));
    t[grp.inputs[k]] = args.back();
  }
  for (int id : grp.nodes) {
    const Node& n = g.node(id);
    std::vector<ir::Tensor> in;
    for (int i : n.inputs) in.push_back(t.at(i));
    try {
      t[id] = op_def(n.op).compute(n, in, sanitize(n.name));
    } catch (const ShapeError& e) {
      if (!symbolic) throw;
      LOOM_THROW(CodegenError, "operator '", n.op, "' of node '", n.name,
                 "' does not compile with symbolic dimensions yet (", e.what(),
                 "); give the shape variable a fixed value");
    }
    // A symbolic dimension the operator's computation does not follow (it took the largest
    // shape's constant) would be wrong at every other length.
    const TensorType& type = n.type;
    for (size_t d = 0; d < type.dims.size(); ++d) {
      std::optional<runtime::DimExpr> got = ir::to_dim_expr(ir::simplify(t[id].shape()[d]));
      if (!got || *got != type.dims[d])
        LOOM_THROW(CodegenError, "operator '", n.op, "' of node '", n.name, "' computes dimension ", d, " as ",
                   ir::to_string(t[id].shape()[d]), ", not ", type.dims[d].str(),
                   ": it does not compile with symbolic dimensions yet; give the shape variable a fixed value");
    }
  }
  args.push_back(t.at(grp.output));
  return args;
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "n" + out;
  return out;
}

namespace {
// The shape variable a dense layer's rows are, when variants at fixed row counts are worth it: a
// decode step's single token, or a few, which a constant row count schedules as one stream over
// the weights or as full register tiles. (A symbolic count takes the GEMM tile of many rows with
// the rows in a guarded tail, and neither fuses its row tiles with the block groups nor
// prefetches the next group's weights.) Every value of the group must use that variable alone,
// as its outermost extent after unit ones, so that a bucket's variant may compute its largest
// count of rows where a run reads fewer (storage holds the largest shape).
std::optional<std::string> rows_variable(const Graph& g, const FusedGroup& grp) {
  const Node& anchor = g.node(grp.anchor);
  if (anchor.op != "dense" || anchor.type.is_static() || anchor.type.dims.size() != 2) return std::nullopt;
  const runtime::DimExpr& rows = anchor.type.dims[0];
  if (rows.offset != 0 || rows.terms.size() != 1 || rows.terms[0].coeff != 1) return std::nullopt;
  const std::string& var = rows.terms[0].var;
  if (!g.shape_var(var)) return std::nullopt;
  std::vector<int> ids = grp.nodes;
  ids.insert(ids.end(), grp.inputs.begin(), grp.inputs.end());
  for (int id : ids) {
    bool outer = true;  // no extent other than 1 before this one
    for (const runtime::DimExpr& d : g.node(id).type.dims) {
      if (d.is_constant()) {
        outer &= d.offset == 1;
        continue;
      }
      if (!outer || !(d == rows)) return std::nullopt;
      outer = false;
    }
  }
  return var;
}

// The row counts a dense layer's variants are compiled for: one row exactly, then buckets that
// compute 4 or 16 rows for runs of 2-4 or 5-16 (the register tile's and a few tiles' worth: the
// weights' stream dominates there, so the rows computed past the run's cost little).
std::vector<runtime::KernelVariant> row_variants(const ShapeVar& v) {
  std::vector<runtime::KernelVariant> out;
  for (auto [from, to] : {std::pair<int64_t, int64_t>{1, 1}, {2, 4}, {5, 16}}) {
    from = std::max(from, v.min);
    to = std::min(to, v.max);
    if (from > to) continue;
    out.push_back({"", v.name, to, from == to ? 0 : from});
  }
  return out;
}
}  // namespace

KernelReport& LoweredKernelBackend::compile(const Graph& g, const FusedGroup& grp, size_t, runtime::KernelCall& call) {
  auto [it, is_new] = report_of_key_.emplace(group_key(g, grp), reports_.size());
  if (is_new) {
    std::string ops = group_ops(g, grp);
    std::string name = std::string(1, prefix_).append(std::to_string(funcs_.size())) + "_" + sanitize(ops);
    lower_group(g, grp, name);
    reports_.push_back({name, ops, 0, 0.0, device()});
    reports_.back().ops = ir::count_ops({group_tensors(g, grp).back()}).value_or(0);
    if (std::optional<std::string> var =
            device() == runtime::KernelDevice::CPU ? rows_variable(g, grp) : std::nullopt) {
      for (runtime::KernelVariant v : row_variants(*g.shape_var(*var))) {
        auto at = at_.find({*var, v.value});
        if (at == at_.end()) {
          std::map<std::string, int64_t> point = g.shape_var_maxima();
          point[*var] = v.value;
          at = at_.emplace(std::pair{*var, v.value}, graph_at(g, point)).first;
        }
        v.func = name + "_at_" + sanitize(*var) + "_" + std::to_string(v.value);
        lower_group(at->second, grp, v.func);
        variants_[it->second].push_back(v);
      }
    }
  }
  call.func = reports_[it->second].func;
  call.ops = reports_[it->second].ops;
  if (auto v = variants_.find(it->second); v != variants_.end()) call.variants = v->second;
  return reports_[it->second];
}

void LoweredKernelBackend::lower_group(const Graph& g, const FusedGroup& grp, const std::string& name) {
  std::vector<ir::Tensor> args = group_tensors(g, grp);
  schedule::Schedule s({args.back()});
  schedule_group(g, g.node(grp.anchor), s, args.back());
  ir::LoweredFunc f = schedule::lower(s, args, name, lower_options());
  // The graph's shape variables that only the body reads (a table slice's first row).
  for (const ir::Var& v : ir::free_vars(f.body)) {
    bool is_arg =
        std::any_of(f.args.begin(), f.args.end(), [&](const ir::Buffer& b) { return b->data.get() == v.get(); });
    if (g.shape_var(v.name()) && !is_arg) f.body_shape_vars.push_back(v);
  }
  funcs_.push_back(std::move(f));
}

KernelBackend* KernelBackends::of(runtime::KernelDevice device) const {
  switch (device) {
    case runtime::KernelDevice::CPU:
      return cpu.get();
    case runtime::KernelDevice::Cuda:
      return cuda.get();
    case runtime::KernelDevice::Accel:
      return accel.get();
  }
  return nullptr;
}

KernelBackends make_backends(const codegen::TargetInfo& target, const BuildOptions& options, AccelBuild* accel) {
  KernelBackends b;
  b.cpu = make_cpu_backend(target, options);
  if (options.cuda) b.cuda = make_cuda_backend(*options.cuda);
  if (accel) b.accel = make_accel_backend(*accel);
  return b;
}

std::vector<KernelReport> compile_kernels(const Graph& g, const FusionPlan& fusion, const Placement& placement,
                                          ValuePlan& plan, KernelBackends& backends, const BuildOptions& options) {
  std::vector<KernelReport> reports;
  std::map<std::pair<runtime::KernelDevice, std::string>, size_t> report_of;  // per device and function
  for (size_t k = 0; k < fusion.groups.size(); ++k) {
    const FusedGroup& grp = fusion.groups[k];
    if (is_in_place(g.node(grp.anchor))) continue;  // its inputs' kernels wrote it (a view: its input)
    const runtime::KernelDevice device = placement.device[k];
    runtime::KernelCall call;
    call.device = device;
    call.node = group_names(g, grp);
    for (int in : grp.inputs) call.args.push_back(plan.value_of.at(in));
    call.args.push_back(plan.value_of.at(grp.output));
    const std::string ops = group_ops(g, grp);
    if (options.progress)
      options.progress("kernel " + std::to_string(k + 1) + "/" + std::to_string(fusion.groups.size()) + ": " +
                       (device == runtime::KernelDevice::CPU ? "" : std::string(runtime::device_name(device)) + " ") +
                       ops);
    KernelBackend* backend = backends.of(device);
    if (!backend) LOOM_THROW(InternalError, "node '", call.node, "' placed on ", runtime::device_name(device));
    try {
      const KernelReport& rep = backend->compile(g, grp, k, call);
      auto [it, is_new] = report_of.emplace(std::make_pair(device, rep.func), reports.size());
      if (is_new) {
        reports.push_back(rep);
        reports.back().accel = device == runtime::KernelDevice::Accel;
      }
      ++reports[it->second].calls;
    } catch (const Error& e) {
      if (device == runtime::KernelDevice::Accel)
        LOOM_THROW(CodegenError, "accelerator kernel for node '", call.node, "': ", e.what());
      LOOM_THROW(CodegenError, device == runtime::KernelDevice::Cuda ? "CUDA kernel" : "kernel", " for node '",
                 g.node(grp.output).name, "' (", ops, "): ", e.what());
    }
    for (int id : placement.upload[k]) call.upload.push_back(plan.value_of.at(id));
    for (int id : placement.download[k]) call.download.push_back(plan.value_of.at(id));
    plan.exec.kernels.push_back(std::move(call));
  }
  return reports;
}

}  // namespace loom::graph
