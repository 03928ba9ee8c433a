#include "cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "loom/runtime/env.h"
#include "loom/runtime/error.h"

namespace loom::runtime::cuda_driver {

namespace {

struct Loaded {
  Api api{};
  std::string error;  // empty: usable
};

template <typename Fn>
bool resolve(void* lib, Fn& fn, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names)
    if (void* p = dlsym(lib, n)) {
      fn = reinterpret_cast<Fn>(p);
      return true;
    }
  missing = *names.begin();
  return false;
}

Loaded load() {
  Loaded l;
  std::string path = env::text("LOOM_CUDA_DRIVER").value_or("libcuda.so.1");
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.error = "no CUDA driver: cannot load " + path + " (" + (e ? e : "unknown error") +
              "); a GPU and NVIDIA's driver are needed";
    return l;
  }
  Api& a = l.api;
  std::string missing;
  bool ok =
      resolve(lib, a.cuInit, {"cuInit"}, missing) && resolve(lib, a.cuDeviceGetCount, {"cuDeviceGetCount"}, missing) &&
      resolve(lib, a.cuDeviceGet, {"cuDeviceGet"}, missing) &&
      resolve(lib, a.cuDeviceGetName, {"cuDeviceGetName"}, missing) &&
      resolve(lib, a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
      resolve(lib, a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
      resolve(lib, a.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
      resolve(lib, a.cuCtxSynchronize, {"cuCtxSynchronize"}, missing) &&
      resolve(lib, a.cuMemAlloc, {"cuMemAlloc_v2"}, missing) && resolve(lib, a.cuMemFree, {"cuMemFree_v2"}, missing) &&
      resolve(lib, a.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing) &&
      resolve(lib, a.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing) &&
      resolve(lib, a.cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}, missing) &&
      resolve(lib, a.cuModuleLoadData, {"cuModuleLoadData"}, missing) &&
      resolve(lib, a.cuModuleUnload, {"cuModuleUnload"}, missing) &&
      resolve(lib, a.cuModuleGetFunction, {"cuModuleGetFunction"}, missing) &&
      resolve(lib, a.cuFuncGetAttribute, {"cuFuncGetAttribute"}, missing) &&
      resolve(lib, a.cuLaunchKernel, {"cuLaunchKernel"}, missing) &&
      resolve(lib, a.cuStreamCreate, {"cuStreamCreate"}, missing) &&
      resolve(lib, a.cuStreamDestroy, {"cuStreamDestroy_v2"}, missing) &&
      resolve(lib, a.cuStreamSynchronize, {"cuStreamSynchronize"}, missing) &&
      resolve(lib, a.cuEventCreate, {"cuEventCreate"}, missing) &&
      resolve(lib, a.cuEventDestroy, {"cuEventDestroy_v2"}, missing) &&
      resolve(lib, a.cuEventRecord, {"cuEventRecord"}, missing) &&
      resolve(lib, a.cuEventSynchronize, {"cuEventSynchronize"}, missing) &&
      resolve(lib, a.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
      resolve(lib, a.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing) &&
      resolve(lib, a.cuStreamEndCapture, {"cuStreamEndCapture"}, missing) &&
      resolve(lib, a.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, missing) &&
      resolve(lib, a.cuGraphLaunch, {"cuGraphLaunch"}, missing) &&
      resolve(lib, a.cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing) &&
      resolve(lib, a.cuGraphDestroy, {"cuGraphDestroy"}, missing) &&
      resolve(lib, a.cuGetErrorName, {"cuGetErrorName"}, missing);
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
