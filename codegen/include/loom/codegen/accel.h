// Accelerator code generator: turns a lowered function scheduled for the accelerator (DMA copies
// into acc.* scopes, tensorized GEMM, ALU nests in the accumulator scope, virtual threads) into
// runtime-driver calls, so it runs on any accelerator device backend.
//
// Host loops have constant bounds, so running the module walks them and emits the instruction
// stream: dma_copy -> LOAD/STORE, accel.gemm.* -> GEMM (the innermost one or two loops around a
// call fold into the instruction's micro-op loop), pragma "alu" nests -> ALU instructions.
// Modules are serialized with dependency tokens (correct on every backend; overlapping contexts
// of virtual threads is future work).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/ir/stmt.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::codegen {

struct AccelRunStats {
  std::map<std::string, uint64_t> counters;
  uint64_t cycles = 0;
  size_t instructions = 0;
};

class AccelModule {
 public:
  AccelModule(ir::LoweredFunc func, accel::AccelConfig config);
  const std::string& name() const { return func_.name; }
  const runtime::FunctionSignature& signature() const { return sig_; }
  // Copies the inputs to the device, runs the stream, copies the outputs back into `args`.
  // Argument shapes and dtypes are checked like runtime::Module::call.
  AccelRunStats run(AccelDevice& device, const std::vector<NDArray>& args) const;
  // The instruction stream the function produces (disassembled), without running it.
  std::string disassemble(AccelDevice& device) const;

 private:
  ir::LoweredFunc func_;
  accel::AccelConfig config_;
  runtime::FunctionSignature sig_;
};

// Checks that the function only uses constructs the accelerator backend handles; throws
// CodegenError naming the construct otherwise.
AccelModule build_accel(const ir::LoweredFunc& func, const accel::AccelConfig& config);

}  // namespace loom::codegen
