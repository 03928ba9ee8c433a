#include "loom/graph/build.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "accel_ops.h"
#include "build_accel.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/schedule/lower.h"

namespace loom::graph {

using nlohmann::json;

namespace {

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "n" + out;
  return out;
}

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

std::string group_ops(const Graph& g, const FusedGroup& grp) {
  std::string s;
  for (int id : grp.nodes) s += (s.empty() ? "" : "+") + g.node(id).op;
  return s;
}

ir::Tensor stage_with_tag(const schedule::Schedule& s, const std::string& tag) {
  for (auto& st : s.stages())
    if (st->op->tag == tag && !st->op->reduce_axes().empty()) return ir::Tensor(st->op);
  return ir::Tensor();
}

// The tuner's key for a blocked conv2d node, if it has one (square kernel, equal strides and pads).
std::optional<ConvKernelKey> conv_kernel_key(const Graph& g, const Node& conv) {
  const Shape& x = g.type_of(conv.inputs[0]).shape;
  const Shape& w = g.type_of(conv.inputs[1]).shape;
  auto strides = conv.attrs.get_ints("strides", {1, 1}), pads = conv.attrs.get_ints("pads", {0, 0, 0, 0}),
       dilations = conv.attrs.get_ints("dilations", {1, 1});
  bool equal_pads = pads.size() == 4 && pads[0] == pads[1] && pads[0] == pads[2] && pads[0] == pads[3];
  int64_t group = ops::int8_conv_weight_group(w);  // [O/b, C/b, k, k, b/G, b, G] (int8) or [O/b, C/b, k, k, b, b]
  // int8 data in the widened form has no template (and must not take a float kernel's tiles).
  if (g.type_of(conv.inputs[0]).dtype != DataType::Float(32) && !group) return std::nullopt;
  if (x.size() != 5 || (w.size() != 6 && !group) || conv.attrs.get_int("groups", 1) != 1 || w[2] != w[3] || strides.size() != 2 ||
      strides[0] != strides[1] || dilations != std::vector<int64_t>{1, 1} || !equal_pads || x[4] != w[5])
    return std::nullopt;
  return ConvKernelKey{x[0], x[1] * x[4], x[2], x[3], w[0] * w[5], w[2], strides[0], pads[0], x[4], group};
}

ir::LoweredFunc lower_group(const Graph& g, const FusedGroup& grp, const std::string& name, const codegen::TargetInfo& target,
                            const BuildOptions& options) {
  int lanes = target.float32_lanes();
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
  schedule::Schedule s({out});
  const Node& anchor = g.node(grp.anchor);
  ir::Tensor conv = stage_with_tag(s, "conv2d"), dense = stage_with_tag(s, "dense");
  bool blocked = anchor.op == "conv2d" && anchor.attrs.get_string("layout", "NCHW") == "NCHWc" && conv.defined();
  if (blocked && anchor.attrs.get_int("groups", 1) == 1) {
    std::optional<ops::NchwcConvTile> tile;
    if (options.conv_tile)
      if (auto key = conv_kernel_key(g, anchor)) tile = options.conv_tile(*key);
    ops::schedule_conv2d_nchwc_cpu(s, conv, out, lanes, target.vector_registers, tile);
  }
  else if (blocked)
    ops::schedule_depthwise_nchwc_cpu(s, conv, out, lanes);
  else if (anchor.op == "conv2d" && anchor.attrs.get_int("oc_block", 0) > 0 && conv.defined())
    ops::schedule_conv2d_fused_cpu(s, conv, out, lanes);
  else if (anchor.op == "conv2d" && conv.defined() && anchor.attrs.get_int("groups", 1) > 1 &&
           anchor.attrs.get_int("groups", 1) == g.type_of(anchor.inputs[0]).shape[1] &&
           anchor.attrs.get_int("groups", 1) == anchor.type.shape[1])
    ops::schedule_depthwise_conv2d_cpu(s, conv, out, lanes);
  else if (anchor.op == "dense" && anchor.attrs.get_int("n_block", 0) > 0 && dense.defined())
    ops::schedule_dense_fused_cpu(s, dense, out, lanes);
  else
    ops::schedule_generic_cpu(s, out, lanes);
  return schedule::lower(s, args, name);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

BuildResult build(Graph g, const BuildOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& m) {
    if (options.progress) options.progress(m);
  };
  codegen::TargetInfo target = codegen::target_info(options.llvm);
  PipelineOptions po = options.pipeline;
  po.layout.vector_lanes = target.float32_lanes();
  BuildResult r;
  po.accel = options.accel;
  po.accel_report = &r.accel_report;
  progress("optimizing the graph (" + std::to_string(g.nodes.size()) + " nodes)");
  optimize(g, po);
  // An output that no kernel computes (an input or a constant) gets a copy kernel.
  for (int& o : g.outputs)
    if (!g.node(o).is_op()) o = g.add_op("identity", g.unique_name(g.node(o).name + "_out"), {o});
  infer_types(g);

  r.fusion = fuse_ops(g);
  r.memory = plan_memory(g, r.fusion);
  // Accelerator groups, the values CPU kernels (or the caller) read, and those accelerator kernels make.
  std::vector<bool> on_accel;
  std::set<int> cpu_read(g.outputs.begin(), g.outputs.end()), accel_read, accel_made;
  for (auto& grp : r.fusion.groups) {
    on_accel.push_back(is_accel_op(g.node(grp.anchor).op));
    (on_accel.back() ? accel_read : cpu_read).insert(grp.inputs.begin(), grp.inputs.end());
    if (on_accel.back()) accel_made.insert(grp.output);
  }
  std::unique_ptr<AccelBuild> ab;
  if (!accel_made.empty()) ab = std::make_unique<AccelBuild>(*options.accel, options.accel_conv_tiling);
  auto touches_accel = [&](int id) { return accel_read.count(id) || accel_made.count(id); };

  // One value per graph input, parameter and kernel output.
  json values = json::array();
  std::map<int, int> value_of;
  std::vector<uint64_t> storages = r.memory.storage_bytes;
  std::vector<int> param_nodes;
  uint64_t params_bytes = 0;
  std::map<int, uint64_t> param_offset;
  auto add_value = [&](int id, json v) {
    const TensorType& t = g.type_of(id);
    v["name"] = g.node(id).name;
    v["shape"] = t.shape;
    v["dtype"] = t.dtype.str();
    value_of[id] = static_cast<int>(values.size());
    values.push_back(std::move(v));
  };
  auto with_accel = [&](int id, json v) {
    if (touches_accel(id)) v["accel_offset"] = ab->place(g, id);
    return v;
  };
  for (int id : g.inputs) {
    add_value(id, with_accel(id, {{"kind", "input"}, {"storage", storages.size()}}));
    storages.push_back((g.type_of(id).nbytes() + 63) / 64 * 64);
  }
  std::set<int> read(cpu_read.begin(), cpu_read.end());
  read.insert(accel_read.begin(), accel_read.end());
  for (int id : read) {
    if (!g.node(id).is_constant()) continue;
    if (!cpu_read.count(id)) {  // only accelerator kernels read it: it lives in the image alone
      add_value(id, with_accel(id, {{"kind", "accel_param"}}));
      continue;
    }
    param_offset[id] = params_bytes;
    param_nodes.push_back(id);
    add_value(id, with_accel(id, {{"kind", "param"}, {"offset", params_bytes}}));
    params_bytes += (g.type_of(id).nbytes() + 63) / 64 * 64;
  }
  for (auto& grp : r.fusion.groups)
    add_value(grp.output, with_accel(grp.output, {{"kind", "temp"}, {"storage", r.memory.storage_of[grp.output]}}));

  // Kernels: identical groups share one function.
  std::set<int> uploaded;
  std::map<std::string, size_t> func_of_key;
  std::vector<ir::LoweredFunc> funcs;
  json kernels = json::array();
  for (size_t k = 0; k < r.fusion.groups.size(); ++k) {
    const FusedGroup& grp = r.fusion.groups[k];
    if (on_accel[k]) {
      std::string name = "a" + std::to_string(k) + "_" + sanitize(g.node(grp.output).name);
      progress("kernel " + std::to_string(k + 1) + "/" + std::to_string(r.fusion.groups.size()) + ": accelerator " + group_ops(g, grp));
      size_t stream;
      try {
        stream = ab->compile_group(g, grp, name);
      } catch (const Error& e) {
        LOOM_THROW(CodegenError, "accelerator kernel for node '", g.node(grp.output).name, "': ", e.what());
      }
      r.kernels.push_back({name, group_ops(g, grp), 1, true});
      json args = json::array(), upload = json::array(), download = json::array();
      for (int in : grp.inputs) {
        args.push_back(value_of.at(in));
        // A host value goes to the device once, before its first accelerator reader.
        if (!g.node(in).is_constant() && !accel_made.count(in) && uploaded.insert(in).second) upload.push_back(value_of.at(in));
      }
      args.push_back(value_of.at(grp.output));
      if (cpu_read.count(grp.output)) download.push_back(value_of.at(grp.output));
      kernels.push_back({{"node", g.node(grp.output).name}, {"func", name}, {"args", args}, {"accel_stream", stream}, {"upload", upload},
                         {"download", download}});
      continue;
    }
    std::string key = group_key(g, grp);
    auto it = func_of_key.find(key);
    if (it == func_of_key.end()) {
      std::string ops = group_ops(g, grp);
      std::string name = "k" + std::to_string(funcs.size()) + "_" + sanitize(ops);
      progress("kernel " + std::to_string(k + 1) + "/" + std::to_string(r.fusion.groups.size()) + ": " + ops);
      try {
        funcs.push_back(lower_group(g, grp, name, target, options));
      } catch (const Error& e) {
        LOOM_THROW(CodegenError, "kernel for node '", g.node(grp.output).name, "' (", ops, "): ", e.what());
      }
      it = func_of_key.emplace(key, r.kernels.size()).first;
      r.kernels.push_back({name, ops, 0});
    }
    KernelReport& rep = r.kernels[it->second];
    ++rep.calls;
    json args = json::array();
    for (int in : grp.inputs) args.push_back(value_of.at(in));
    args.push_back(value_of.at(grp.output));
    std::string nodes;
    for (int id : grp.nodes) nodes += (nodes.empty() ? "" : "+") + g.node(id).name;
    kernels.push_back({{"node", nodes}, {"func", rep.func}, {"args", args}});
  }

  json inputs = json::array(), outputs = json::array();
  for (int id : g.inputs) inputs.push_back(value_of.at(id));
  for (int id : g.outputs) outputs.push_back(value_of.at(id));
  json graph_json = {{"format", runtime::kGraphFormat},
                     {"version", runtime::kGraphFormatVersion},
                     {"model", g.name},
                     {"target", target.cpu},
                     {"storages", storages},
                     {"planned_bytes", r.memory.planned_bytes()},
                     {"unplanned_bytes", r.memory.unplanned_bytes},
                     {"values", values},
                     {"inputs", inputs},
                     {"outputs", outputs},
                     {"kernels", kernels}};
  r.file.graph_json = graph_json.dump();
  r.file.params = runtime::aligned_buffer(params_bytes);
  r.file.params_bytes = params_bytes;
  for (int id : param_nodes) {
    const NDArray& v = g.node(id).value;
    std::memcpy(r.file.params.get() + param_offset[id], v.raw_data(), v.nbytes());
  }

  progress("compiling " + std::to_string(funcs.size()) + " kernels with LLVM");
  auto lib = std::filesystem::temp_directory_path() /
             ("loom_build_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(&r)) + ".so");
  try {
    codegen::export_library(funcs, lib.string(), options.llvm);
  } catch (...) {
    std::filesystem::remove(lib);
    throw;
  }
  r.file.library = read_file(lib.string());
  std::filesystem::remove(lib);
  if (ab) r.file.accel_image = ab->finish().serialize();
  r.graph = std::move(g);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace loom::graph
