// The runtime's CUDA side: its errors where there is no GPU (every CI machine), the program format,
// and on a GPU (skipped with the reason elsewhere) kernels against the naive reference and cuda
// graphs replaying them.
#include <cstdlib>
#include <fstream>

#include "common/error_text.h"
#include "cuda_cases.h"
#include "loom/codegen/cuda.h"
#include "loom/runtime/cuda.h"

namespace loom {
namespace {

using namespace loom::ir;
using runtime::CudaProgram;

CudaProgram small_program() {
  CudaProgram p;
  runtime::CudaFunction f;
  f.name = "f";
  f.args = {{"A", {4}, DataType::Float(32)}, {"B", {4}, DataType::Float(32)}};
  f.workspace_bytes = {64};
  runtime::CudaKernelSpec k;
  k.name = "f_kernel0";
  k.block = {4, 1, 1};
  k.buffers = {0, 2, 1};
  k.registers = 12;
  f.kernels = {k};
  p.functions = {f};
  p.source = "src";
  p.ptx = "ptx";
  p.cubin = std::string(
      "\x7f"
      "ELF\0\1",
      6);
  p.compile_log = "log";
  return p;
}

TEST(CudaRuntime, ProgramsRoundTripThroughTheirBinaryForm) {
  CudaProgram p = small_program();
  CudaProgram q = CudaProgram::deserialize(p.serialize(), "test");
  EXPECT_EQ(q.cubin, p.cubin);
  EXPECT_EQ(q.functions[0].kernels[0].buffers, p.functions[0].kernels[0].buffers);
  EXPECT_EQ(q.functions[0].kernels[0].registers, 12);
  EXPECT_EQ(q.functions[0].args[1].str(), "float32[4]");
  EXPECT_EQ(q.functions[0].workspace_bytes, std::vector<uint64_t>{64});
}

TEST(CudaRuntime, MalformedProgramsAreModelErrors) {
  std::string bytes = small_program().serialize();
  for (size_t cut : {size_t(0), size_t(10), size_t(20), bytes.size() - 1})
    EXPECT_THROW(CudaProgram::deserialize(bytes.substr(0, cut), "cut"), ModelError) << cut;
  CudaProgram bad = small_program();
  bad.functions[0].kernels[0].buffers = {0, 3};  // 2 arguments + 1 workspace
  std::string err = test::error_text<ModelError>([&] { CudaProgram::deserialize(bad.serialize(), "bad.loomcuda"); });
  EXPECT_NE(err.find("bad.loomcuda: kernel f_kernel0 takes buffer 3"), std::string::npos) << err;
  bad = small_program();
  bad.functions[0].kernels[0].block = {2048, 1, 1};
  EXPECT_THROW(CudaProgram::deserialize(bad.serialize(), "bad"), ModelError);
}

TEST(CudaRuntime, WithoutADriverEveryEntryIsADeviceErrorSayingSo) {
  std::string why;
  if (runtime::cuda_available(&why)) GTEST_SKIP() << "a GPU is here";
  EXPECT_FALSE(why.empty());
  // Without the driver's library: the library, and the loader's own reason.
  if (why.find("cannot load ") != std::string::npos)
    EXPECT_NE(why.find(": cannot open shared object file"), std::string::npos) << why;
  std::string err =
      test::error_text<DeviceError>([] { NDArray::empty({4}, DataType::Float(32), runtime::cuda_device()); });
  EXPECT_EQ(err, why);
  EXPECT_THROW(runtime::CudaModule::load(small_program()), DeviceError);
  EXPECT_THROW(runtime::CudaStream s, DeviceError);
}

TEST(CudaRuntime, TheToolkitStubLibraryIsNamedAsNoGpu) {
  const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub)) GTEST_SKIP() << "no CUDA toolkit stub at " << stub;
  setenv("LOOM_CUDA_DRIVER", stub, 1);  // read once per process: this test runs in its own
  std::string why;
  bool available = runtime::cuda_available(&why);
  if (available || why.find("libcuda.so.1") != std::string::npos)
    GTEST_SKIP() << "the driver was looked up earlier in this process";
  EXPECT_NE(why.find("stub library"), std::string::npos) << why;
}

TEST(CudaRuntime, HostOnlyAccessOfAGpuArrayIsADeviceError) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  NDArray a = NDArray::empty({8}, DataType::Float(32), runtime::cuda_device());
  EXPECT_THROW(a.get_as_double(0), DeviceError);
}

// ---- on a GPU ----

NDArray run_on_gpu(const runtime::CudaModule& m, const std::string& fn, std::vector<NDArray> host_args, size_t out) {
  std::vector<NDArray> dev;
  for (auto& a : host_args) dev.push_back(a.to_device(runtime::cuda_device()));
  m.call(fn, dev);
  return dev[out].to_device({kDLCPU, 0});
}

TEST(CudaRuntime, TiledGemmOnTheGpuMatchesTheReference) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  auto w = test::matmul(128, 192, 64);
  schedule::Schedule s(w.outputs);
  ops::schedule_gemm_cuda(s, w.inputs[0], w.inputs[1], w.outputs[0]);
  auto m = runtime::CudaModule::load(codegen::cuda::build({test::lower_gpu(s, w, "gemm")}));
  auto d = test::case_data(w);
  EXPECT_TRUE(test::arrays_close(run_on_gpu(m, "gemm", d.args, 2), d.want[0], 1e-4, 1e-4));
}

TEST(CudaRuntime, GenericSoftmaxOnTheGpuMatchesAndReplaysAsAGraph) {
  std::string why;
  if (!runtime::cuda_available(&why)) GTEST_SKIP() << why;
  if (!codegen::cuda::nvrtc_enabled()) GTEST_SKIP() << "built without the CUDA toolkit";
  auto w = test::softmax(16, 300);
  schedule::Schedule s(w.outputs);
  ops::schedule_cuda_generic(s, 64);
  auto m = runtime::CudaModule::load(codegen::cuda::build({test::lower_gpu(s, w, "softmax")}));
  auto d = test::case_data(w);
  EXPECT_TRUE(test::arrays_close(run_on_gpu(m, "softmax", d.args, 1), d.want[0], 1e-4, 1e-6));
  NDArray x = d.args[0].to_device(runtime::cuda_device());
  NDArray y = NDArray::empty({16, 300}, DataType::Float(32), runtime::cuda_device());
  runtime::CudaStream stream;
  stream.begin_capture();
  m.launch("softmax", {x.raw_data(), y.raw_data()}, stream.handle());
  stream.end_capture();
  stream.launch_graph();
  stream.synchronize();
  EXPECT_TRUE(test::arrays_close(y.to_device({kDLCPU, 0}), d.want[0], 1e-4, 1e-6));
}

}  // namespace
}  // namespace loom
