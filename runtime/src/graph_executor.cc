#include "loom/runtime/graph_executor.h"
#include "loom/runtime/interrupt.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

#include "kernel_runner.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"

namespace loom::runtime {

namespace {

// The host memory an executor may allocate by default: the machine's physical memory.
uint64_t default_host_memory_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(1) << 40;
}

// NaN or infinity in an input of a quantized model: an error naming the input, the first such
// element and how many there are.
void check_finite(const std::string& name, const NDArray& a) {
  if (!a.dtype().is_float()) return;
  int64_t first = -1, count = 0;
  const bool f32 = a.dtype() == DataType::Float(32);
  const float* v = f32 ? a.data<float>() : nullptr;
  for (int64_t i = 0, n = a.numel(); i < n; ++i)
    if (!std::isfinite(f32 ? double(v[i]) : a.get_as_double(i))) {
      if (first < 0) first = i;
      ++count;
    }
  if (count)
    LOOM_THROW(RuntimeError, "input '", name, "' holds ", count, " NaN or infinite value", count > 1 ? "s" : "",
               " (the first at element ", first, ": ", a.get_as_double(first),
               "); this model is quantized, and its int8 layers would turn them into plausible-looking numbers. "
               "Clean the input, or allow them (loom run --allow-non-finite; ExecutorOptions::allow_non_finite)");
}

}  // namespace

GraphExecutor GraphExecutor::load(const std::string& path, const ExecutorOptions& options) {
  return from_model_file(load_model_file(path), "'" + path + "'", options);
}

GraphExecutor GraphExecutor::from_model_file(const ModelFile& file, const std::string& origin,
                                             const ExecutorOptions& options) {
  ExecutorGraph plan = ExecutorGraph::from_json(file.graph_json, file.params_bytes, origin);
  const uint64_t limit = options.max_host_bytes ? options.max_host_bytes : default_host_memory_limit();
  if (plan.storage_total() > limit)
    LOOM_THROW(ModelError, origin, ": the model's activation buffers need ", plan.storage_total(),
               " bytes of host memory, more than the limit of ", limit,
               " (ExecutorOptions::max_host_bytes; loom run --max-host-memory)");
  GraphExecutor ex;
  ex.target_ = plan.target;
  ex.allow_non_finite_ = options.allow_non_finite;
  ex.model_name_ = plan.model;
  ex.params_ = file.params;
  ex.params_bytes_ = file.params_bytes;
  ex.planned_bytes_ = plan.planned_bytes;
  ex.unplanned_bytes_ = plan.unplanned_bytes;
  for (uint64_t bytes : plan.storages) ex.storages_.push_back(aligned_buffer(bytes));
  std::vector<void*> host;
  ex.shape_vars_ = plan.shape_vars;
  ex.shape_values_->assign(plan.shape_vars.size(), 0);
  for (size_t i = 0; i < plan.shape_vars.size(); ++i) (*ex.shape_values_)[i] = plan.shape_vars[i].max;
  for (const ExecutorValue& pv : plan.values) {
    Value val;
    val.spec = {pv.name, pv.shape, pv.dtype, pv.dims};
    val.nbytes = pv.nbytes();
    val.finite_only = pv.finite_only && pv.kind == ValueKind::Input;
    val.in_place_region = pv.in_place_region;
    if (pv.kind == ValueKind::Param) val.data = ex.params_.get() + pv.param_offset;
    if (pv.kind == ValueKind::Input || pv.kind == ValueKind::Temp)
      val.data = ex.storages_[pv.storage].get() + pv.storage_offset;
    host.push_back(val.data);
    ex.values_.push_back(std::move(val));
  }
  // A runner per device the kernels use, each checking its calls against the model file now, so a
  // run only calls.
  bool on[3] = {false, false, false};
  for (const KernelCall& call : plan.kernels) on[int(call.device)] = true;
  if (!plan.shape_vars.empty() && on[int(KernelDevice::Cuda)])
    LOOM_THROW(ModelError, origin, ": the model has shape variables and CUDA kernels; symbolic dimensions run on CPU ",
               "kernels only");
  // Accelerator kernels of a model with shape variables touch static values only (their image
  // places and tilings are constants).
  for (const KernelCall& call : plan.kernels) {
    if (call.device != KernelDevice::Accel) continue;
    for (const auto* ids : {&call.args, &call.upload, &call.download})
      for (int id : *ids)
        if (size_t(id) < plan.values.size() && !plan.values[size_t(id)].dims.empty())
          LOOM_THROW(ModelError, origin, ": accelerator node '", call.node, "' reads or writes '",
                     plan.values[size_t(id)].name, "' ", ex.values_[size_t(id)].spec.str(),
                     ", whose shape changes with the shape variables; accelerator kernels take static shapes only");
  }
  RunnerInputs in{file, plan, host, origin, options, ex.shape_values_};
  if (on[int(KernelDevice::Cuda)]) ex.cuda_ = make_cuda_runner(in);
  if (on[int(KernelDevice::CPU)]) ex.cpu_ = make_cpu_runner(in);
  if (on[int(KernelDevice::Accel)]) ex.accel_ = make_accel_runner(in);
  auto runner = [&](KernelDevice d) -> KernelRunner& {
    switch (d) {
      case KernelDevice::CPU:
        return as_runner(*ex.cpu_);
      case KernelDevice::Accel:
        return as_runner(*ex.accel_);
      case KernelDevice::Cuda:
        return as_runner(*ex.cuda_);
    }
    LOOM_THROW(InternalError, "no runner for device ", int(d));
  };
  for (size_t k = 0; k < plan.kernels.size(); ++k)
    if (k == 0 || plan.kernels[k].device != plan.kernels[k - 1].device)
      ex.runs_.push_back({&runner(plan.kernels[k].device), k, k + 1});
    else
      ex.runs_.back().last = k + 1;
  ex.inputs_ = std::move(plan.inputs);
  for (int id : ex.inputs_) ex.input_shapes_.push_back(ex.value_at(id).spec.shape);
  ex.outputs_ = std::move(plan.outputs);
  ex.kernels_ = std::move(plan.kernels);
  // The thread pool starts, and measures the fork-join its parallel threshold comes from, now: not
  // inside the first kernel's time (the storages were touched when they were zeroed).
  if (ex.cpu_ && num_threads() > 1) min_parallel_work();
  return ex;
}

const GraphExecutor::Value& GraphExecutor::value_at(int id) const { return values_.at(static_cast<size_t>(id)); }

const ArgSpec& GraphExecutor::input_spec(size_t i) const {
  if (i >= inputs_.size()) LOOM_THROW(RuntimeError, "model has ", inputs_.size(), " inputs, no input ", i);
  return value_at(inputs_[i]).spec;
}

const ArgSpec& GraphExecutor::output_spec(size_t i) const {
  if (i >= outputs_.size()) LOOM_THROW(RuntimeError, "model has ", outputs_.size(), " outputs, no output ", i);
  return value_at(outputs_[i]).spec;
}

void GraphExecutor::set_input(size_t i, const NDArray& a) {
  const ArgSpec& spec = input_spec(i);
  if (!a.defined()) LOOM_THROW(RuntimeError, "input '", spec.name, "': undefined array");
  std::string got = a.dtype().str() + shape_str(a.shape());
  if (a.dtype() != spec.dtype) LOOM_THROW(TypeError, "input '", spec.name, "' expects ", spec.str(), ", got ", got);
  check_shape(i, a.shape(), "input '" + spec.name + "' expects " + spec.str() + ", got " + got);
  if (value_at(inputs_[i]).finite_only && !allow_non_finite_) check_finite(spec.name, a);
  std::memcpy(value_at(inputs_[i]).data, a.raw_data(), a.nbytes());
  input_shapes_[i] = a.shape();
}

void GraphExecutor::check_shape(size_t i, const std::vector<int64_t>& shape, const std::string& what) const {
  const ArgSpec& spec = input_spec(i);
  if (spec.is_static() && shape != spec.shape) LOOM_THROW(ShapeError, what);
  if (spec.is_static()) return;
  // What the shape alone can check: the dims over variables it has as whole dimensions. A sum of
  // variables that come from other inputs (a mask's past + seq) is checked by run, which binds
  // every input's first.
  ShapeExpr own = spec.dims;
  std::set<std::string> whole;
  for (const DimExpr& d : own)
    if (const std::string* v = d.as_variable()) whole.insert(*v);
  for (size_t d = 0; d < own.size() && d < shape.size(); ++d) {
    bool deferred = false;
    for (const DimTerm& t : own[d].terms) deferred |= !whole.count(t.var);
    if (!deferred) continue;
    // Within what the storage holds now; run checks the exact value before any kernel reads it.
    auto [lo, hi] = dim_range(own[d], shape_vars_);
    if (shape[d] < lo || shape[d] > hi)
      LOOM_THROW(ShapeError, what, ": dimension ", d, " is ", shape[d], ", outside ", own[d].str(), "'s range [", lo,
                 ", ", hi, "]");
    own[d] = DimExpr::constant(shape[d]);
  }
  std::map<std::string, int64_t> values;
  if (std::string why = bind_shape(own, shape, values); !why.empty()) LOOM_THROW(ShapeError, what, ": ", why);
  for (const ShapeVar& v : shape_vars_) {
    auto it = values.find(v.name);
    if (it != values.end() && (it->second < v.min || it->second > v.max))
      LOOM_THROW(ShapeError, what, ": ", v.name, " = ", it->second, " is outside its range [", v.min, ", ", v.max, "]");
  }
}

void GraphExecutor::bind_shapes() {
  if (shape_vars_.empty()) return;
  std::map<std::string, int64_t> values;
  std::map<std::string, size_t> from;  // the input each variable came from
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const ArgSpec& spec = input_spec(i);
    if (spec.is_static()) continue;
    std::map<std::string, int64_t> mine;
    bind_shape(spec.dims, input_shapes_[i], mine);  // set_input checked it
    for (auto& [v, x] : mine) {
      auto [it, is_new] = values.emplace(v, x);
      if (is_new) from[v] = i;
      if (it->second != x)
        LOOM_THROW(ShapeError, "input '", spec.name, "' has ", v, " = ", x, " (", spec.str(), " as ",
                   shape_str(input_shapes_[i]), ") but input '", input_spec(from[v]).name, "' has ", v, " = ",
                   it->second, " (", shape_str(input_shapes_[from[v]]), ")");
    }
  }
  // Dims that are sums of variables bound by other inputs (a mask's past + seq); set_input checked
  // every other dim.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const ArgSpec& spec = input_spec(i);
    if (std::all_of(spec.dims.begin(), spec.dims.end(),
                    [](const DimExpr& d) { return d.is_constant() || d.as_variable(); }))
      continue;
    std::map<std::string, int64_t> all = values;
    if (std::string why = bind_shape(spec.dims, input_shapes_[i], all); !why.empty())
      LOOM_THROW(ShapeError, "input '", spec.name, "' expects ", spec.str(), ", got ", shape_str(input_shapes_[i]),
                 ": ", why);
  }
  for (size_t k = 0; k < shape_vars_.size(); ++k) {
    auto it = values.find(shape_vars_[k].name);
    // A variable no input's dims use keeps its maximum (the compiler declares only variables that
    // inputs define).
    (*shape_values_)[k] = it != values.end() ? it->second : shape_vars_[k].max;
  }
}

std::map<std::string, int64_t> GraphExecutor::shape_values() const {
  std::map<std::string, int64_t> m;
  for (size_t k = 0; k < shape_vars_.size(); ++k) m[shape_vars_[k].name] = (*shape_values_)[k];
  return m;
}

std::vector<int64_t> GraphExecutor::current_shape(int id) const {
  const ArgSpec& spec = value_at(id).spec;
  return spec.is_static() ? spec.shape : eval_shape(spec.dims, shape_values());
}

void GraphExecutor::set_input(const std::string& name, const NDArray& a) {
  std::string have;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (input_spec(i).name == name) return set_input(i, a);
    have += (have.empty() ? "" : ", ") + input_spec(i).name;
  }
  LOOM_THROW(RuntimeError, "model has no input '", name, "' (inputs: ", have, ")");
}

AccelDevice* GraphExecutor::accel_device() const { return accel_ ? &runtime::accel_device(*accel_) : nullptr; }

const std::vector<AccelKernelStats>& GraphExecutor::accel_stats() const {
  static const std::vector<AccelKernelStats> none;
  return accel_ ? runtime::accel_stats(*accel_) : none;
}

bool GraphExecutor::replayed_cuda_graph() const { return cuda_ && replayed_graph(*cuda_); }

void GraphExecutor::run() {
  bind_shapes();
  for (const KernelRun& r : runs_) {
    check_interrupt("the model's run was stopped between kernels");
    r.runner->run(r.first, r.last);
  }
}

std::vector<double> GraphExecutor::run_profiled() {
  bind_shapes();
  std::vector<double> times;
  for (const KernelRun& r : runs_) {
    check_interrupt("the model's run was stopped between kernels");
    r.runner->run_profiled(r.first, r.last, times);
  }
  return times;
}

NDArray GraphExecutor::get_output(size_t i) const {
  const ArgSpec& spec = output_spec(i);
  NDArray out = NDArray::empty(current_shape(outputs_[i]), spec.dtype);
  std::memcpy(out.raw_data(), value_at(outputs_[i]).data, out.nbytes());
  return out;
}

std::vector<NDArray> GraphExecutor::run(const std::vector<NDArray>& inputs) {
  if (inputs.size() != inputs_.size())
    LOOM_THROW(RuntimeError, "model takes ", inputs_.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) set_input(i, inputs[i]);
  run();
  std::vector<NDArray> outs;
  for (size_t i = 0; i < outputs_.size(); ++i) outs.push_back(get_output(i));
  return outs;
}

void GraphExecutor::repoint(int id, void* data) {
  values_.at(size_t(id)).data = data;
  for (KernelRunner* r : {cpu_ ? &as_runner(*cpu_) : nullptr, accel_ ? &as_runner(*accel_) : nullptr,
                          cuda_ ? &as_runner(*cuda_) : nullptr})
    if (r && !r->repoint(id, data)) LOOM_THROW(InternalError, "a runner cannot repoint value ", id);
}

void GraphExecutor::carry(size_t output, size_t input) {
  const ArgSpec &out = output_spec(output), &in = input_spec(input);
  std::string pair = "output '" + out.name + "' (" + out.str() + ") into input '" + in.name + "' (" + in.str() + ")";
  if (cuda_)
    LOOM_THROW(ModelError, "carrying ", pair, ": the model has GPU kernels; carried values are supported on CPU and ",
               "accelerator kernels only");
  if (out.dtype != in.dtype || out.shape.size() != in.shape.size())
    LOOM_THROW(ModelError, "carrying ", pair, ": they differ in element type or rank");
  for (const Carried& c : carried_)
    if (c.output == output || c.input == input) LOOM_THROW(ModelError, "carrying ", pair, ": one is carried already");
  // Written by a kernel (not a view into another value's storage, nor a parameter or an input).
  bool written = false;
  for (const KernelCall& k : kernels_) written |= !k.args.empty() && k.args.back() == outputs_[output];
  if (!written) LOOM_THROW(ModelError, "carrying ", pair, ": no kernel writes the output itself");
  // Its own buffer would leave the values sharing its bytes (an in-place concat holding it, a view
  // of it) on the old storage.
  if (value_at(outputs_[output]).in_place_region)
    LOOM_THROW(ModelError, "carrying ", pair, ": the output shares its storage with an in-place concat or reshape ",
               "(graph::PipelineOptions::concat_in_place = false keeps them copies)");
  uint64_t bytes = std::max(value_at(outputs_[output]).nbytes, value_at(inputs_[input]).nbytes);
  for (int id : {outputs_[output], inputs_[input]}) {
    carried_buffers_.push_back(aligned_buffer(bytes));
    repoint(id, carried_buffers_.back().get());
  }
  carried_.push_back({output, input});
}

void GraphExecutor::advance_carried() {
  std::vector<std::vector<int64_t>> shapes;
  for (const Carried& c : carried_) {
    shapes.push_back(current_shape(outputs_[c.output]));
    check_shape(c.input, shapes.back(),
                "carrying output '" + output_spec(c.output).name + "' " + shape_str(shapes.back()) + " into input '" +
                    input_spec(c.input).name + "' (" + input_spec(c.input).str() + ")");
  }
  for (size_t k = 0; k < carried_.size(); ++k) {
    int out = outputs_[carried_[k].output], in = inputs_[carried_[k].input];
    void *was_out = values_[size_t(out)].data, *was_in = values_[size_t(in)].data;
    repoint(in, was_out);
    repoint(out, was_in);
    input_shapes_[carried_[k].input] = shapes[k];
  }
}

}  // namespace loom::runtime
