// CUDA in the runtime: the compiled form of GPU functions (CudaProgram, written by codegen/cuda,
// read here), the GPU itself (CudaDevice: the driver API, loaded with dlopen("libcuda.so.1") at
// first use, so every binary starts on machines without a driver), and a program loaded onto it
// (CudaModule). No CUDA header is included anywhere in the runtime.
//
//   CudaProgram p = codegen::cuda::build(lowered);            // or read from a .loom file
//   CudaModule m = CudaModule::load(p);                        // DeviceError: no driver / no GPU
//   NDArray a = host_a.to_device(cuda_device());               // kDLCUDA arrays
//   m.call("gemm", {a, b, c});
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

// One kernel launch of a GPU function.
struct CudaKernelSpec {
  std::string name;  // the __global__ function in the program's module
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_bytes = 0;  // static shared memory
  // The buffers it takes, in order: id < args.size() is the function's argument id, a larger id
  // the workspace id - args.size().
  std::vector<uint32_t> buffers;
  int registers = -1;  // per thread, as ptxas allocated them (-1: not compiled yet)
};

// A function lowered for the GPU: its arguments (inputs, then outputs), the global workspaces it
// needs between kernels, and its kernels in execution order.
struct CudaFunction {
  std::string name;
  std::vector<ArgSpec> args;
  std::vector<uint64_t> workspace_bytes;
  std::vector<CudaKernelSpec> kernels;
};

// One CUDA module: the functions, their CUDA C source, and what NVRTC made of it: PTX (kept as the
// fallback a driver JIT-compiles for another GPU) and a cubin for `arch`.
struct CudaProgram {
  std::string arch = "sm_90";
  std::vector<CudaFunction> functions;
  std::string source, ptx, cubin;
  std::string compile_log;  // NVRTC's and ptxas' messages (resource use)

  const CudaFunction& function(const std::string& name) const;  // RuntimeError if absent
  // One binary blob (a .loom section, a file): versioned, every length checked on reading;
  // ModelError naming `origin` on malformed bytes.
  std::string serialize() const;
  static CudaProgram deserialize(const std::string& bytes, const std::string& origin);
};

struct CudaDeviceInfo {
  std::string name;
  int ordinal = 0, cc_major = 0, cc_minor = 0, multiprocessors = 0;
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};

// Whether a usable GPU is here; when not, `why` says what is missing (no libcuda.so.1, a stub
// driver, no device) — what GPU tests print when they skip.
bool cuda_available(std::string* why = nullptr);
// GPU `ordinal`, initialised on first use (primary context). DeviceError naming what is missing.
const CudaDeviceInfo& cuda_device_info(int ordinal = 0);
inline DLDevice cuda_device(int ordinal = 0) { return {kDLCUDA, ordinal}; }

// Raw device memory and copies on the current GPU (device pointers as void*). All throw DeviceError
// with the driver's error name and what was being done.
void* cuda_alloc(size_t bytes, int ordinal = 0);
void cuda_free(void* ptr, int ordinal = 0) noexcept;
void cuda_copy_to_device(void* dst, const void* src, size_t bytes, int ordinal = 0);
void cuda_copy_to_host(void* dst, const void* src, size_t bytes, int ordinal = 0);
void cuda_copy_device(void* dst, const void* src, size_t bytes, int ordinal = 0);
void cuda_synchronize(int ordinal = 0);

// A CUDA stream, and a graph captured on it (replayed with one launch).
class CudaStream {
 public:
  explicit CudaStream(int ordinal = 0);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  void* handle() const { return stream_; }
  void synchronize() const;
  void begin_capture();
  void end_capture();  // instantiates the captured graph
  bool has_graph() const { return graph_exec_ != nullptr; }
  void launch_graph();  // asynchronous, on this stream
  // Milliseconds `work` takes on this stream (events around it; waits for the end).
  float time_ms(const std::function<void()>& work);

 private:
  int ordinal_;
  void* stream_ = nullptr;
  void* graph_ = nullptr;
  void* graph_exec_ = nullptr;
};

// A CudaProgram loaded on a GPU: the cubin when it was compiled for this GPU's architecture, else
// the PTX (JIT-compiled by the driver).
class CudaModule {
 public:
  CudaModule() = default;
  static CudaModule load(const CudaProgram& program, int ordinal = 0);

  bool defined() const { return impl_ != nullptr; }
  bool loaded_from_ptx() const;
  const CudaProgram& program() const;
  // The index of function `fn` in the program (RuntimeError naming what exists if absent), for
  // launches by index where one function is launched many times.
  size_t function_index(const std::string& fn) const;
  // Launches every kernel of function `fn` on `stream` (null: the default stream) with device
  // pointers for its arguments; workspaces are the module's own. Asynchronous.
  void launch(size_t fn, const std::vector<void*>& args, void* stream = nullptr) const;
  void launch(const std::string& fn, const std::vector<void*>& args, void* stream = nullptr) const {
    launch(function_index(fn), args, stream);
  }
  // Checks the arguments (kDLCUDA arrays of the signature's shapes and types), launches, waits.
  void call(const std::string& fn, const std::vector<NDArray>& args) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace loom::runtime
