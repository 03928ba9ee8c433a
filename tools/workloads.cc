#include "workloads.h"

#include "loom/codegen/llvm.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/ops/cuda_schedules.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"

namespace loom::tools {

using namespace loom::ir;

namespace {

// A workload of `inputs` -> `out`, scheduled by `sched`.
BuiltWorkload with_schedule(std::vector<Tensor> inputs, Tensor out, double flops,
                            const std::function<void(schedule::Schedule&)>& sched) {
  BuiltWorkload w;
  w.inputs = std::move(inputs);
  w.outputs = {out};
  w.schedule = std::make_unique<schedule::Schedule>(w.outputs);
  sched(*w.schedule);
  w.flops = flops;
  return w;
}

BuiltWorkload gemm(int size) {
  int n = size > 0 ? size : 256;
  Tensor A = placeholder({n, n}, DataType::Float(32), "A"), B = placeholder({n, n}, DataType::Float(32), "B");
  codegen::TargetInfo target = codegen::target_info();  // the register tile for the host's vectors
  ops::GemmTiling t = ops::gemm_tiling_for(target.float32_lanes(), target.vector_registers);
  Tensor C = ops::matmul_packed(A, B, t.nr, "C");
  return with_schedule({A, B}, C, 2.0 * n * n * n,
                       [&](schedule::Schedule& s) { ops::schedule_matmul_packed_cpu(s, C, t); });
}

BuiltWorkload conv2d(int size) {
  int hw = size > 0 ? size : 28;
  Tensor X = placeholder({1, 64, hw, hw}, DataType::Float(32), "X"),
         W = placeholder({64, 64, 3, 3}, DataType::Float(32), "W");
  codegen::TargetInfo target = codegen::target_info();  // the register tile for the host's vectors
  ops::ConvNchwTiling t = ops::conv_nchw_tiling_for(target.float32_lanes(), target.vector_registers, 64, hw);
  Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, t.oc_block, "Y");
  return with_schedule({X, W}, Y, 2.0 * 64 * 64 * 9 * hw * hw,
                       [&](schedule::Schedule& s) { ops::schedule_conv2d_nchw_cpu(s, Y, t.oc_block, t.x_block); });
}

BuiltWorkload softmax(int size) {
  int n = size > 0 ? size : 64;
  Tensor X = placeholder({n, 1000}, DataType::Float(32), "X");
  // The models' softmax (its row max and sum in two steps, vectorized) with the models' schedule.
  Tensor Y = ops::softmax(X, 1, "Y");
  return with_schedule({X}, Y, 4.0 * n * 1000, [&](schedule::Schedule& s) {
    ops::schedule_generic_cpu(s, Y, codegen::target_info().float32_lanes());
  });
}

// The same computations scheduled for a GPU (ops/cuda_schedules.h).
BuiltWorkload gemm_gpu(int size) {
  int n = size > 0 ? size : 256;
  Tensor A = placeholder({n, n}, DataType::Float(32), "A"), B = placeholder({n, n}, DataType::Float(32), "B");
  Tensor C = ops::matmul(A, B, "C");
  return with_schedule({A, B}, C, 2.0 * n * n * n, [&](schedule::Schedule& s) {
    if (n % 64 == 0)
      ops::schedule_gemm_cuda(s, A, B, C);
    else
      ops::schedule_cuda_generic(s);
  });
}

BuiltWorkload conv2d_gpu(int size) {
  int hw = size > 0 ? size : 28;
  Tensor X = placeholder({1, 64, hw, hw}, DataType::Float(32), "X"),
         W = placeholder({64, 64, 3, 3}, DataType::Float(32), "W");
  Tensor Y = ops::conv2d_nchw(X, W, 1, 1, "Y");
  return with_schedule({X, W}, Y, 2.0 * 64 * 64 * 9 * hw * hw,
                       [&](schedule::Schedule& s) { ops::schedule_conv2d_cuda(s, Y, Y, 4, 128); });
}

BuiltWorkload softmax_gpu(int size) {
  int n = size > 0 ? size : 64;
  Tensor X = placeholder({n, 1000}, DataType::Float(32), "X");
  Tensor Y = ops::softmax(X, 1, "Y");
  return with_schedule({X}, Y, 4.0 * n * 1000, [](schedule::Schedule& s) { ops::schedule_cuda_generic(s); });
}

}  // namespace

const std::vector<WorkloadInfo>& builtin_workloads() {
  static const std::vector<WorkloadInfo> list = {
      {"gemm", "fp32 C = A x B, packed and register-tiled (size = n, a multiple of 32, default 256)", gemm, 8192,
       gemm_gpu},
      {"conv2d", "fp32 3x3 conv, 64->64 channels, NCHW (size = height/width, default 28)", conv2d, 1024, conv2d_gpu},
      {"softmax", "fp32 row softmax over 1000 classes (size = rows, default 64)", softmax, 65536, softmax_gpu},
  };
  return list;
}

const WorkloadInfo& find_workload(const std::string& name) {
  std::string names;
  for (auto& w : builtin_workloads()) {
    if (w.name == name) return w;
    names += (names.empty() ? "" : ", ") + w.name;
  }
  LOOM_THROW(Error, "unknown workload '", name, "' (built-in: ", names, ")");
}

BuiltWorkload build_workload(const std::string& name, int size, bool gpu) {
  const WorkloadInfo& w = find_workload(name);
  if (size < 0 || size > w.max_size)
    LOOM_THROW(Error, "--size: Value ", size, " not in range 1 to ", w.max_size, " for ", name);
  return gpu ? w.build_gpu(size) : w.build(size);
}

}  // namespace loom::tools
