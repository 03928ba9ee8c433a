#include "cuda_driver.h"

#include <mutex>

#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/shared_object.h"

namespace loom::runtime::cuda_driver {

namespace {

struct Loaded {
  Api api{};
  std::string error;  // empty: usable
};

Loaded load() {
  Loaded l;
  std::string path = env::text("LOOM_CUDA_DRIVER").value_or("libcuda.so.1"), why;
  void* lib = open_shared_object({path}, why);
  if (!lib) {
    l.error = "no CUDA driver: cannot load " + path + " (" + why + "); a GPU and NVIDIA's driver are needed";
    return l;
  }
  Api& a = l.api;
  std::string missing;
  bool ok = bind_symbol(lib, a.cuInit, {"cuInit"}, missing) &&
            bind_symbol(lib, a.cuDeviceGetCount, {"cuDeviceGetCount"}, missing) &&
            bind_symbol(lib, a.cuDeviceGet, {"cuDeviceGet"}, missing) &&
            bind_symbol(lib, a.cuDeviceGetName, {"cuDeviceGetName"}, missing) &&
            bind_symbol(lib, a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
            bind_symbol(lib, a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
            bind_symbol(lib, a.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
            bind_symbol(lib, a.cuCtxSynchronize, {"cuCtxSynchronize"}, missing) &&
            bind_symbol(lib, a.cuMemAlloc, {"cuMemAlloc_v2"}, missing) &&
            bind_symbol(lib, a.cuMemFree, {"cuMemFree_v2"}, missing) &&
            bind_symbol(lib, a.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing) &&
            bind_symbol(lib, a.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing) &&
            bind_symbol(lib, a.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}, missing) &&
            bind_symbol(lib, a.cuModuleLoadData, {"cuModuleLoadData"}, missing) &&
            bind_symbol(lib, a.cuModuleUnload, {"cuModuleUnload"}, missing) &&
            bind_symbol(lib, a.cuModuleGetFunction, {"cuModuleGetFunction"}, missing) &&
            bind_symbol(lib, a.cuFuncGetAttribute, {"cuFuncGetAttribute"}, missing) &&
            bind_symbol(lib, a.cuLaunchKernel, {"cuLaunchKernel"}, missing) &&
            bind_symbol(lib, a.cuStreamCreate, {"cuStreamCreate"}, missing) &&
            bind_symbol(lib, a.cuStreamDestroy, {"cuStreamDestroy_v2"}, missing) &&
            bind_symbol(lib, a.cuStreamSynchronize, {"cuStreamSynchronize"}, missing) &&
            bind_symbol(lib, a.cuEventCreate, {"cuEventCreate"}, missing) &&
            bind_symbol(lib, a.cuEventDestroy, {"cuEventDestroy_v2"}, missing) &&
            bind_symbol(lib, a.cuEventRecord, {"cuEventRecord"}, missing) &&
            bind_symbol(lib, a.cuEventSynchronize, {"cuEventSynchronize"}, missing) &&
            bind_symbol(lib, a.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
            bind_symbol(lib, a.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing) &&
            bind_symbol(lib, a.cuStreamEndCapture, {"cuStreamEndCapture"}, missing) &&
            bind_symbol(lib, a.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, missing) &&
            bind_symbol(lib, a.cuGraphLaunch, {"cuGraphLaunch"}, missing) &&
            bind_symbol(lib, a.cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing) &&
            bind_symbol(lib, a.cuGraphDestroy, {"cuGraphDestroy"}, missing) &&
            bind_symbol(lib, a.cuGetErrorName, {"cuGetErrorName"}, missing);
  if (!ok) {
    l.error = path + " has no symbol " + missing + ": the driver is older than CUDA 12";
    return l;
  }
  CUresult r = a.cuInit(0);
  if (r == kErrorStubLibrary) {
    l.error = path + " is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver: no GPU here";
  } else if (r == kErrorNoDevice) {
    l.error = "the CUDA driver finds no GPU (CUDA_ERROR_NO_DEVICE)";
  } else if (r != kSuccess) {
    l.error = "cuInit failed: " + std::to_string(r);
  } else {
    int count = 0;
    if (a.cuDeviceGetCount(&count) != kSuccess || count == 0) l.error = "the CUDA driver finds no GPU";
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const Api& api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw DeviceError(l.error);
  return l.api;
}

std::string error_name(CUresult r) {
  const char* name = nullptr;
  const Loaded& l = loaded();
  if (l.error.empty() && l.api.cuGetErrorName(r, &name) == kSuccess && name)
    return std::string(name) + " (" + std::to_string(r) + ")";
  return "CUDA error " + std::to_string(r);
}

void check(CUresult r, const std::string& what) {
  if (r != kSuccess) LOOM_THROW(DeviceError, what, ": ", error_name(r));
}

}  // namespace loom::runtime::cuda_driver
