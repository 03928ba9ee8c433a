#include "loom/runtime/graph_executor.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>

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
  for (int64_t i = 0; i < a.numel(); ++i)
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
  for (const ExecutorValue& pv : plan.values) {
    Value val;
    val.spec = {pv.name, pv.shape, pv.dtype};
    val.nbytes = pv.nbytes();
    val.accel_offset = pv.accel_offset;
    val.finite_only = pv.finite_only && pv.kind == ValueKind::Input;
    if (pv.kind == ValueKind::Param) val.data = ex.params_.get() + pv.param_offset;
    if (pv.kind == ValueKind::Input || pv.kind == ValueKind::Temp)
      val.data = ex.storages_[pv.storage].get() + pv.storage_offset;
    ex.values_.push_back(std::move(val));
  }
  ex.inputs_ = std::move(plan.inputs);
  ex.outputs_ = std::move(plan.outputs);
  ex.kernels_ = std::move(plan.kernels);
  size_t gpu_kernels = 0;
  for (auto& call : ex.kernels_) gpu_kernels += call.device == KernelDevice::Cuda;
  if (gpu_kernels) {
    if (gpu_kernels != ex.kernels_.size())
      LOOM_THROW(ModelError, origin, ": ", gpu_kernels, " of its ", ex.kernels_.size(),
                 " kernels run on CUDA; models that mix CUDA with other devices are not supported yet");
    ex.cuda_ = load_cuda(ex, file, plan, origin, options);
    return ex;
  }
  ex.module_ = Module::load_from_memory(file.library, origin);
  bool any_accel = false;
  for (auto& call : ex.kernels_) any_accel |= call.device == KernelDevice::Accel;
  if (any_accel) {
    if (file.accel_image.empty()) LOOM_THROW(ModelError, origin, ": accelerator kernels but no accelerator image");
    auto st = std::make_shared<AccelState>();
    st->image = AccelImage::parse(file.accel_image, origin);
    std::string cfg = options.accel_config_json.empty() ? st->image.config_json : options.accel_config_json;
    st->device = make_accel_device(options.accel_backend, cfg);
    st->loaded = std::make_unique<LoadedAccelImage>(*st->device, st->image);
    st->stats.resize(ex.kernels_.size());
    ex.accel_ = std::move(st);
  }
  // Check every call against the kernel's signature once, so run() can call without checks.
  for (auto& call : ex.kernels_) {
    if (call.device == KernelDevice::Accel) {
      if (size_t(call.accel_stream) >= ex.accel_->image.streams.size())
        LOOM_THROW(ModelError, origin, ": node '", call.node, "' runs accelerator stream ", call.accel_stream, " of ",
                   ex.accel_->image.streams.size());
      for (int id : call.args) {
        const Value& v = ex.values_[size_t(id)];
        if (v.accel_offset < 0)
          LOOM_THROW(ModelError, origin, ": accelerator node '", call.node, "' reads '", v.spec.name,
                     "', which is not in the image");
        ex.accel_->loaded->address(uint64_t(v.accel_offset), v.nbytes);  // bounds
      }
      for (int id : call.upload)
        if (!ex.values_[size_t(id)].data)
          LOOM_THROW(ModelError, origin, ": node '", call.node, "' uploads '", ex.values_[size_t(id)].spec.name,
                     "', which has no host copy");
      for (int id : call.download)
        if (!ex.values_[size_t(id)].data)
          LOOM_THROW(ModelError, origin, ": node '", call.node, "' downloads '", ex.values_[size_t(id)].spec.name,
                     "', which has no host copy");
      ex.fns_.push_back(nullptr);
      ex.arg_ptrs_.emplace_back();
      continue;
    }
    if (!ex.module_.has_function(call.func))
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node,
                 "') is missing from the kernel library");
    const FunctionSignature& sig = ex.module_.signature(call.func);
    if (sig.args.size() != call.args.size())
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' takes ", sig.args.size(),
                 " arguments, the graph passes ", call.args.size());
    std::vector<void*> ptrs;
    for (size_t a = 0; a < call.args.size(); ++a) {
      const Value& v = ex.values_[call.args[a]];
      if (v.spec.shape != sig.args[a].shape || v.spec.dtype != sig.args[a].dtype)
        LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' argument ", a, " expects ", sig.args[a].str(),
                   ", the graph passes '", v.spec.name, "' ", v.spec.str());
      if (!v.data)
        LOOM_THROW(ModelError, origin, ": CPU kernel '", call.func, "' reads '", v.spec.name,
                   "', which lives only on the accelerator");
      ptrs.push_back(v.data);
    }
    ex.fns_.push_back(ex.module_.get_function(call.func));
    ex.arg_ptrs_.push_back(std::move(ptrs));
  }
  // The thread pool starts, and measures the fork-join its parallel threshold comes from, now: not
  // inside the first kernel's time (the storages were touched when they were zeroed).
  if (!ex.kernels_.empty() && num_threads() > 1) min_parallel_work();
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
  if (a.shape() != spec.shape) LOOM_THROW(ShapeError, "input '", spec.name, "' expects ", spec.str(), ", got ", got);
  if (value_at(inputs_[i]).finite_only && !allow_non_finite_) check_finite(spec.name, a);
  std::memcpy(value_at(inputs_[i]).data, a.raw_data(), a.nbytes());
}

void GraphExecutor::set_input(const std::string& name, const NDArray& a) {
  std::string have;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (input_spec(i).name == name) return set_input(i, a);
    have += (have.empty() ? "" : ", ") + input_spec(i).name;
  }
  LOOM_THROW(RuntimeError, "model has no input '", name, "' (inputs: ", have, ")");
}

AccelDevice* GraphExecutor::accel_device() const { return accel_ ? accel_->device.get() : nullptr; }

const std::vector<AccelKernelStats>& GraphExecutor::accel_stats() const {
  static const std::vector<AccelKernelStats> none;
  return accel_ ? accel_->stats : none;
}

void GraphExecutor::run_accel(size_t k) {
  auto t0 = std::chrono::steady_clock::now();
  const KernelCall& call = kernels_[k];
  AccelDevice& dev = *accel_->device;
  LoadedAccelImage& img = *accel_->loaded;
  for (int id : call.upload) {
    const Value& v = values_[size_t(id)];
    dev.write(img.address(uint64_t(v.accel_offset), v.nbytes), v.data, v.nbytes);
  }
  try {
    img.run(size_t(call.accel_stream));
  } catch (const DeviceError& e) {
    LOOM_THROW(DeviceError, "accelerator kernel for node '", call.node, "' on ", dev.name(), ": ", e.what());
  }
  for (int id : call.download) {
    const Value& v = values_[size_t(id)];
    dev.read(img.address(uint64_t(v.accel_offset), v.nbytes), v.data, v.nbytes);
  }
  AccelKernelStats& s = accel_->stats[k];
  std::vector<uint64_t> c = dev.run_counters();  // one batch (one round trip on a remote device)
  auto counter = [&](AccelCounter k) { return c[1 + size_t(k)]; };
  s.cycles = c[0];
  s.gemm_macs = counter(AccelCounter::GemmMacs);
  s.dma_bytes = counter(AccelCounter::DmaLoadBytesInp) + counter(AccelCounter::DmaLoadBytesWgt) +
                counter(AccelCounter::DmaLoadBytesAcc) + counter(AccelCounter::DmaLoadBytesUop) +
                counter(AccelCounter::DmaStoreBytes);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void GraphExecutor::call_kernel(size_t k) {
  if (kernels_[k].device == KernelDevice::Accel) return run_accel(k);
  loom_set_last_error("");
  int32_t rc = fns_[k](arg_ptrs_[k].data());
  if (rc != 0) {
    const char* msg = loom_get_last_error();
    LOOM_THROW(RuntimeError, "kernel '", kernels_[k].func, "' (node '", kernels_[k].node,
               "'): ", msg && *msg ? msg : "failed", " (code ", rc, ")");
  }
}

void GraphExecutor::run() {
  if (cuda_) return run_cuda();
  for (size_t k = 0; k < fns_.size(); ++k) call_kernel(k);
}

std::vector<double> GraphExecutor::run_profiled() {
  if (cuda_) return run_cuda_profiled();
  std::vector<double> times;
  for (size_t k = 0; k < fns_.size(); ++k) {
    auto t0 = std::chrono::steady_clock::now();
    call_kernel(k);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return times;
}

NDArray GraphExecutor::get_output(size_t i) const {
  const ArgSpec& spec = output_spec(i);
  NDArray out = NDArray::empty(spec.shape, spec.dtype);
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

}  // namespace loom::runtime
