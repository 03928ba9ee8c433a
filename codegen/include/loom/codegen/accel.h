// Accelerator code generator: turns a lowered function scheduled for the accelerator (DMA copies
// into acc.* scopes, tensorized GEMM, ALU nests in the accumulator scope, virtual threads) into
// runtime-driver calls, so it runs on any accelerator device backend.
//
// Host loops have constant bounds, so compiling walks them once and emits the instruction stream
// (dma_copy -> LOAD/STORE, accel.gemm.* -> GEMM with up to six surrounding loops folded into the
// instruction, pragma "alu" nests -> ALU instructions, dependency tokens from scratchpad hazards)
// into a relocatable runtime::AccelImage (accel/linker.h). Running a compiled function only
// places that image on a device and launches it: no IR is walked at run time.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/accel/linker.h"
#include "loom/ir/stmt.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/accel_image.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"

namespace loom::codegen {

struct AccelRunStats {
  std::map<std::string, uint64_t> counters;
  uint64_t cycles = 0;
  size_t instructions = 0;
};

// Each argument's element width in device memory: what its DMA copies move it as (inputs at the
// config's inp_bits, weights at wgt_bits, accumulator loads at acc_bits, stores at out_bits),
// else its dtype's. Narrower than the dtype means packed (accel/packing.h): host tensors keep
// the values in their dtype, device memory holds accel_arg_bytes of them. CodegenError for an
// argument moved at two widths, or at more bits than its dtype has.
std::vector<int> accel_arg_bits(const ir::LoweredFunc& func, const accel::AccelConfig& config);
// Bytes of `arg` in device memory at `bits` per element.
uint64_t accel_arg_bytes(const ir::BufferNode& arg, int bits);

// Emits the instruction stream of `func` into `linker` as stream `stream_name`, with argument k
// at image offset arg_offsets[k] (reserved by the caller, accel_arg_bytes big). Returns the
// stream's index.
size_t emit_accel(const ir::LoweredFunc& func, accel::ImageLinker& linker, const std::vector<uint64_t>& arg_offsets,
                  const std::string& stream_name);

// The instructions of stream `stream` of a linked image, decoded for `config` (addresses as linked).
std::vector<accel::Instruction> decode_stream(const runtime::AccelImage& image, size_t stream,
                                              const accel::AccelConfig& config);

// One function compiled on its own: an image holding its arguments, micro-ops and one stream.
struct CompiledAccelFunc {
  runtime::AccelImage image;
  std::vector<uint64_t> arg_offsets;  // image offset of each argument
};

class AccelModule {
 public:
  AccelModule(ir::LoweredFunc func, accel::AccelConfig config);
  const std::string& name() const { return func_.name; }
  const runtime::FunctionSignature& signature() const { return sig_; }
  // The compiled image (emitted on first use, then kept).
  const CompiledAccelFunc& compiled() const;
  // Places the compiled image on the device, copies the inputs in, runs the stream and copies the
  // outputs back into `args`. Argument shapes and dtypes are checked like runtime::Module::call;
  // narrow arguments (arg_bits) are packed in and unpacked out, a value outside their range a
  // TypeError.
  AccelRunStats run(AccelDevice& device, const std::vector<NDArray>& args) const;
  // The instruction stream the function compiles to, decoded and disassembled (addresses as linked).
  std::vector<accel::Instruction> instructions() const;
  std::string disassemble() const;
  std::string disassemble(AccelDevice&) const { return disassemble(); }
  // Element width of each argument in device memory (accel_arg_bits).
  const std::vector<int>& arg_bits() const { return arg_bits_; }

 private:
  ir::LoweredFunc func_;
  accel::AccelConfig config_;
  runtime::FunctionSignature sig_;
  std::vector<int> arg_bits_;
  mutable std::shared_ptr<const CompiledAccelFunc> compiled_;
};

// Checks that the function only uses constructs the accelerator backend handles; throws
// CodegenError naming the construct otherwise.
AccelModule build_accel(const ir::LoweredFunc& func, const accel::AccelConfig& config);

}  // namespace loom::codegen
