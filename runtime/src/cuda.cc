// The CUDA device, streams and loaded programs over the driver API of cuda_driver.h.
#include <map>
#include <mutex>

#include "cuda_driver.h"
#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

using namespace cuda_driver;

namespace {

struct DeviceState {
  CudaDeviceInfo info;
  CUcontext ctx = nullptr;
};

// The primary context of GPU `ordinal`, current on the calling thread.
DeviceState& device(int ordinal) {
  static std::mutex mu;
  static std::map<int, DeviceState> devices;
  const Api& a = api();
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices.find(ordinal);
  if (it == devices.end()) {
    int count = 0;
    check(a.cuDeviceGetCount(&count), "counting GPUs");
    if (ordinal < 0 || ordinal >= count)
      LOOM_THROW(DeviceError, "GPU ", ordinal, " does not exist (this machine has ", count, ")");
    DeviceState st;
    CUdevice dev = 0;
    check(a.cuDeviceGet(&dev, ordinal), "opening GPU " + std::to_string(ordinal));
    char name[256] = {};
    check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "naming GPU");
    st.info.name = name;
    st.info.ordinal = ordinal;
    check(a.cuDeviceGetAttribute(&st.info.cc_major, kAttrCcMajor, dev), "reading the compute capability");
    check(a.cuDeviceGetAttribute(&st.info.cc_minor, kAttrCcMinor, dev), "reading the compute capability");
    check(a.cuDeviceGetAttribute(&st.info.multiprocessors, kAttrMultiprocessors, dev), "counting multiprocessors");
    check(a.cuDevicePrimaryCtxRetain(&st.ctx, dev), "creating the context of GPU " + std::to_string(ordinal));
    it = devices.emplace(ordinal, st).first;
  }
  check(a.cuCtxSetCurrent(it->second.ctx), "making GPU " + std::to_string(ordinal) + " current");
  return it->second;
}

CUdeviceptr dptr(const void* p) { return CUdeviceptr(reinterpret_cast<uintptr_t>(p)); }

}  // namespace

bool cuda_available(std::string* why) {
  try {
    device(0);
    return true;
  } catch (const DeviceError& e) {
    if (why) *why = e.what();
    return false;
  }
}

const CudaDeviceInfo& cuda_device_info(int ordinal) { return device(ordinal).info; }

void* cuda_alloc(size_t bytes, int ordinal) {
  device(ordinal);
  CUdeviceptr p = 0;
  check(api().cuMemAlloc(&p, bytes),
        "allocating " + std::to_string(bytes) + " bytes on GPU " + std::to_string(ordinal));
  return reinterpret_cast<void*>(uintptr_t(p));
}

void cuda_free(void* ptr, int ordinal) noexcept {
  try {
    device(ordinal);
    api().cuMemFree(dptr(ptr));
  } catch (...) {  // freeing while the driver is gone (process exit): nothing left to free
  }
}

void cuda_copy_to_device(void* dst, const void* src, size_t bytes, int ordinal) {
  device(ordinal);
  check(api().cuMemcpyHtoD(dptr(dst), src, bytes), "copying " + std::to_string(bytes) + " bytes to the GPU");
}
void cuda_copy_to_host(void* dst, const void* src, size_t bytes, int ordinal) {
  device(ordinal);
  check(api().cuMemcpyDtoH(dst, dptr(src), bytes), "copying " + std::to_string(bytes) + " bytes from the GPU");
}
void cuda_copy_device(void* dst, const void* src, size_t bytes, int ordinal) {
  device(ordinal);
  check(api().cuMemcpyDtoD(dptr(dst), dptr(src), bytes), "copying " + std::to_string(bytes) + " bytes on the GPU");
}
void cuda_synchronize(int ordinal) {
  device(ordinal);
  check(api().cuCtxSynchronize(), "waiting for GPU " + std::to_string(ordinal));
}

// ---- streams and graphs ----

CudaStream::CudaStream(int ordinal) : ordinal_(ordinal) {
  device(ordinal);
  CUstream s = nullptr;
  check(api().cuStreamCreate(&s, kStreamNonBlocking), "creating a stream");
  stream_ = s;
}

CudaStream::~CudaStream() {
  try {
    device(ordinal_);
    const Api& a = api();
    if (graph_exec_) a.cuGraphExecDestroy(static_cast<CUgraphExec>(graph_exec_));
    if (graph_) a.cuGraphDestroy(static_cast<CUgraph>(graph_));
    a.cuStreamDestroy(static_cast<CUstream>(stream_));
  } catch (...) {
  }
}

void CudaStream::synchronize() const {
  device(ordinal_);
  check(api().cuStreamSynchronize(static_cast<CUstream>(stream_)), "waiting for a stream");
}

void CudaStream::begin_capture() {
  device(ordinal_);
  check(api().cuStreamBeginCapture(static_cast<CUstream>(stream_), kCaptureModeThreadLocal),
        "starting a graph capture");
}

void CudaStream::end_capture() {
  device(ordinal_);
  const Api& a = api();
  CUgraph g = nullptr;
  check(a.cuStreamEndCapture(static_cast<CUstream>(stream_), &g), "ending a graph capture");
  CUgraphExec e = nullptr;
  CUresult r = a.cuGraphInstantiateWithFlags(&e, g, 0);
  if (r != kSuccess) {
    a.cuGraphDestroy(g);
    check(r, "instantiating a captured graph");
  }
  if (graph_exec_) a.cuGraphExecDestroy(static_cast<CUgraphExec>(graph_exec_));
  if (graph_) a.cuGraphDestroy(static_cast<CUgraph>(graph_));
  graph_ = g;
  graph_exec_ = e;
}

void CudaStream::launch_graph() {
  if (!graph_exec_) LOOM_THROW(DeviceError, "launch_graph: no graph was captured on this stream");
  device(ordinal_);
  check(api().cuGraphLaunch(static_cast<CUgraphExec>(graph_exec_), static_cast<CUstream>(stream_)),
        "launching a captured graph");
}

float CudaStream::time_ms(const std::function<void()>& work) {
  device(ordinal_);
  const Api& a = api();
  CUevent start = nullptr, stop = nullptr;
  check(a.cuEventCreate(&start, 0), "creating an event");
  check(a.cuEventCreate(&stop, 0), "creating an event");
  float ms = 0;
  try {
    check(a.cuEventRecord(start, static_cast<CUstream>(stream_)), "recording an event");
    work();
    check(a.cuEventRecord(stop, static_cast<CUstream>(stream_)), "recording an event");
    check(a.cuEventSynchronize(stop), "waiting for an event");
    check(a.cuEventElapsedTime(&ms, start, stop), "timing events");
  } catch (...) {
    a.cuEventDestroy(start);
    a.cuEventDestroy(stop);
    throw;
  }
  a.cuEventDestroy(start);
  a.cuEventDestroy(stop);
  return ms;
}

// ---- loaded programs ----

struct CudaModule::Impl {
  CudaProgram program;
  int ordinal = 0;
  bool from_ptx = false;
  CUmodule module = nullptr;
  std::vector<std::vector<CUfunction>> functions;  // per CudaFunction, per kernel
  std::vector<std::vector<void*>> workspaces;      // per CudaFunction
  ~Impl() {
    try {
      device(ordinal);
      for (auto& ws : workspaces)
        for (void* p : ws) api().cuMemFree(dptr(p));
      if (module) api().cuModuleUnload(module);
    } catch (...) {
    }
  }
};

CudaModule CudaModule::load(const CudaProgram& program, int ordinal) {
  const CudaDeviceInfo& info = cuda_device_info(ordinal);
  const Api& a = api();
  auto impl = std::make_shared<Impl>();
  impl->program = program;
  impl->ordinal = ordinal;
  bool cubin_fits = !program.cubin.empty() && program.arch == info.arch();
  if (!cubin_fits && program.ptx.empty())
    LOOM_THROW(DeviceError, "CUDA program compiled for ", program.arch, " has no PTX to run on ", info.name, " (",
               info.arch(), ")");
  impl->from_ptx = !cubin_fits;
  // cuModuleLoadData reads a NUL-terminated PTX text.
  std::string image = cubin_fits ? program.cubin : program.ptx + '\0';
  check(a.cuModuleLoadData(&impl->module, image.data()), std::string("loading the CUDA module (") +
                                                             (cubin_fits ? "cubin " : "PTX for ") + program.arch +
                                                             ") on " + info.name);
  for (auto& fn : program.functions) {
    std::vector<CUfunction> ks;
    for (auto& k : fn.kernels) {
      CUfunction f = nullptr;
      check(a.cuModuleGetFunction(&f, impl->module, k.name.c_str()), "finding kernel " + k.name);
      ks.push_back(f);
    }
    impl->functions.push_back(std::move(ks));
    std::vector<void*> ws;
    for (uint64_t bytes : fn.workspace_bytes) ws.push_back(cuda_alloc(std::max<uint64_t>(bytes, 1), ordinal));
    impl->workspaces.push_back(std::move(ws));
  }
  CudaModule m;
  m.impl_ = std::move(impl);
  return m;
}

bool CudaModule::loaded_from_ptx() const { return impl_ && impl_->from_ptx; }

const CudaProgram& CudaModule::program() const {
  if (!impl_) LOOM_THROW(RuntimeError, "CudaModule: not loaded");
  return impl_->program;
}

size_t CudaModule::function_index(const std::string& name) const {
  const CudaProgram& p = program();
  for (size_t fi = 0; fi < p.functions.size(); ++fi)
    if (p.functions[fi].name == name) return fi;
  p.function(name);  // throws, naming what exists
  return 0;
}

void CudaModule::launch(size_t fi, const std::vector<void*>& args, void* stream) const {
  const CudaProgram& p = program();
  LOOM_CHECK(fi < p.functions.size(), "function index ", fi, " of ", p.functions.size());
  const CudaFunction& fn = p.functions[fi];
  if (args.size() != fn.args.size())
    LOOM_THROW(ShapeError, fn.name, ": expects ", fn.args.size(), " arguments, got ", args.size());
  device(impl_->ordinal);
  const Api& a = api();
  for (size_t k = 0; k < fn.kernels.size(); ++k) {
    const CudaKernelSpec& ks = fn.kernels[k];
    std::vector<void*> ptrs;
    for (uint32_t b : ks.buffers) ptrs.push_back(b < args.size() ? args[b] : impl_->workspaces[fi].at(b - args.size()));
    std::vector<void*> params;
    for (auto& ptr : ptrs) params.push_back(&ptr);
    check(a.cuLaunchKernel(impl_->functions[fi][k], ks.grid[0], ks.grid[1], ks.grid[2], ks.block[0], ks.block[1],
                           ks.block[2], 0, static_cast<CUstream>(stream), params.data(), nullptr),
          "launching " + ks.name);
  }
}

void CudaModule::call(const std::string& name, const std::vector<NDArray>& args) const {
  const CudaFunction& fn = program().function(name);
  if (args.size() != fn.args.size())
    LOOM_THROW(ShapeError, name, ": expects ", fn.args.size(), " arguments, got ", args.size());
  std::vector<void*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& s = fn.args[i];
    if (args[i].device().device_type != kDLCUDA || args[i].device().device_id != impl_->ordinal)
      LOOM_THROW(DeviceError, name, ": argument '", s.name, "' must live on GPU ", impl_->ordinal, " (got ",
                 args[i].describe(), " on device type ", int(args[i].device().device_type), ")");
    if (args[i].shape() != s.shape)
      LOOM_THROW(ShapeError, name, ": argument '", s.name, "' must be ", s.str(), ", got ", args[i].describe());
    if (args[i].dtype() != s.dtype)
      LOOM_THROW(TypeError, name, ": argument '", s.name, "' must be ", s.str(), ", got ", args[i].describe());
    ptrs.push_back(args[i].raw_data());
  }
  launch(name, ptrs, nullptr);
  cuda_synchronize(impl_->ordinal);
}

}  // namespace loom::runtime
