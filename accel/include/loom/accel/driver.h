// The accelerator runtime driver (the role of VTA's runtime): builds instruction streams and
// micro-op kernels from C++ calls, manages device buffers, and runs streams on any AccelDevice.
//
//   Driver drv(device, config);
//   auto a = drv.alloc(bytes);  drv.copy_to_device(a, host, bytes);
//   drv.load_2d(MemType::Inp, 0, a.addr, 1, 4, 4);          // 4 input entries
//   drv.dep_push(Module::Load, Module::Compute);
//   drv.dep_pop(Module::Load, Module::Compute);
//   UopKernel k = UopKernelBuilder().loop(4, 1, 1, 0).push(0, 0, 0).build();
//   drv.gemm(k, /*reset=*/false);
//   ...
//   drv.synchronize();                                      // FINISH, upload, launch, wait
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/accel/config.h"
#include "loom/accel/isa.h"
#include "loom/runtime/accel_device.h"

namespace loom::accel {

// A micro-op kernel: micro-ops inside up to two affine loops (outer first).
struct UopKernel {
  struct Loop {
    uint32_t extent, dst_factor, src_factor, wgt_factor;
  };
  std::vector<Loop> loops;
  std::vector<MicroOp> uops;
  std::string key() const;  // content identity, for caching
  enum class Field { Dst, Src, Wgt };
  // Each iteration's entry of one micro-op field, in issue order (outer loop, inner loop, micro-ops).
  std::vector<uint32_t> entries(Field field) const;
};

class UopKernelBuilder {
 public:
  // Adds a loop level (at most two; the first call is the outer loop).
  UopKernelBuilder& loop(uint32_t extent, uint32_t dst_factor, uint32_t src_factor, uint32_t wgt_factor = 0);
  UopKernelBuilder& push(uint32_t dst, uint32_t src, uint32_t wgt = 0);
  UopKernel build() const;

 private:
  UopKernel k_;
};

struct DeviceBuffer {
  uint64_t addr = 0, bytes = 0;
};

class Driver {
 public:
  Driver(AccelDevice& device, AccelConfig config);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const AccelConfig& config() const { return config_; }
  AccelDevice& device() { return device_; }

  // ---- device memory ----
  // Aligned to every scratchpad's entry (and to `alignment`, a power of two, when larger).
  DeviceBuffer alloc(uint64_t bytes, uint64_t alignment = 64);
  void free(const DeviceBuffer& b);
  void copy_to_device(const DeviceBuffer& b, const void* src, uint64_t bytes, uint64_t offset = 0);
  void copy_from_device(const DeviceBuffer& b, void* dst, uint64_t bytes, uint64_t offset = 0);
  // DMA address (in entries of `mem`) of a byte address; must be entry-aligned.
  uint32_t dram_entry(uint64_t addr, MemType mem) const;

  // ---- instruction stream ----
  // Copies y_size rows of x_size entries (rows x_stride entries apart in DRAM) into the scratchpad
  // at sram_base, padding with zero entries around them.
  void load_2d(MemType mem, uint32_t sram_base, uint64_t dram_addr, uint32_t y_size, uint32_t x_size, uint32_t x_stride,
               uint32_t y_pad0 = 0, uint32_t y_pad1 = 0, uint32_t x_pad0 = 0, uint32_t x_pad1 = 0);
  // Copies y_size x x_size output entries from the out scratchpad to DRAM.
  void store_2d(uint32_t sram_base, uint64_t dram_addr, uint32_t y_size, uint32_t x_size, uint32_t x_stride);
  void gemm(const UopKernel& kernel, bool reset);
  void alu(const UopKernel& kernel, AluOp op, bool use_imm, int32_t imm = 0);
  // Folds a MIN or MAX by an immediate into the stream's last instruction when that is the other
  // one over the same micro-ops and loops, with no token on it and none waiting: the pair becomes
  // one CLIP (both bounds signed bytes, lo <= hi, so either order clamps alike). Returns whether
  // it did; when not, the caller emits alu() as usual.
  // The CLIP it makes joins a SHR by an immediate right before it, over the same micro-ops and
  // loops with no token between them, as one SHRSAT when its bounds are a SHRSAT's range and the
  // kernel names each entry once.
  bool fold_into_clip(const UopKernel& kernel, AluOp op, int32_t imm);
  // Turns the GEMM reset at `index` of the stream into a MOV of `imm` over the same micro-ops and
  // loops (same cycles, same tokens): for code generators that learn later that the zeroed
  // accumulators get a constant added before anything else reads them. Throws IsaError when that
  // instruction is not a GEMM reset or imm does not fit the ALU immediate.
  void preset_reset(size_t index, int32_t imm);
  // VTA semantics: dep_push marks the last instruction of `from` to push a token to `to`;
  // dep_pop makes the next instruction of `to` wait for that token. Adjacent modules only.
  void dep_push(Module from, Module to);
  void dep_pop(Module from, Module to);
  // Makes instruction `index` of the current stream push a token to neighbouring module `to`
  // (for code generators that place tokens after the fact; pair it with dep_pop on `to`).
  void add_push(size_t index, Module to);

  // For code generators: let the driver reorganize each stream when it is finished, for time on
  // the device (split_closing_store, load_micro_ops_once below); the same results. Off by
  // default, so that hand-built and generated programs run as written.
  void set_finish_rewrites(bool on) { finish_rewrites_ = on; }

  // Ends the stream with FINISH (waiting for the store module), uploads it, launches it and waits.
  // Throws DeviceError with the backend's message on failure. Returns the counters of the run.
  std::map<std::string, uint64_t> synchronize(std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

  // The stream built so far (for disassembly and program files).
  const std::vector<Instruction>& stream() const { return stream_; }
  // Finishes the stream and uploads it without launching: returns (address, count).
  std::pair<uint64_t, uint32_t> finalize_stream();
  // Finishes the stream into a device buffer of its own (kept until the driver is destroyed) and
  // starts a new, empty one: for code generators that build several streams to launch later.
  struct SealedStream {
    uint64_t addr = 0;
    uint32_t count = 0;
    std::vector<Instruction> instructions;  // as uploaded, FINISH included
  };
  SealedStream seal_stream();
  // Number of distinct micro-op kernels uploaded so far (cache statistics).
  size_t uploaded_kernels() const { return kernels_.size(); }

 private:
  // fold_into_clip's SHR and CLIP over `kernel` as one SHRSAT, where they can be
  void fuse_shift_into_clip(const UopKernel& kernel);
  // The stream's closing pair, an ALU pass over the last tile's entries and the STORE of them
  // (nothing left on the compute module for that STORE to overlap), in parts: each part's STORE
  // runs while the ALU computes the next. Only for one micro-op over consecutive entries that the
  // STORE copies as one row, in parts of at least kClosingStorePartEntries; when the stream is
  // finished.
  void split_closing_store();
  static constexpr uint32_t kClosingStoreParts = 4, kClosingStorePartEntries = 64;
  // A stream whose micro-op LOADs never write an entry twice (none reloads the buffer): they (each
  // on the compute module, each a DMA's latency) become one LOAD of them all, placed where they
  // were placed, at the stream's start; when the stream is finished.
  void load_micro_ops_once();
  struct KernelInfo {
    DeviceBuffer dram;
    std::vector<uint32_t> words;  // the encoded micro-ops
  };
  void push(Instruction i);
  uint32_t place_kernel(const UopKernel& k);  // returns its uop SRAM base, loading it if needed
  Instruction compute_insn(Opcode op, const UopKernel& k, uint32_t base);
  Instruction noop(Module m) const;
  std::vector<InsnWord> finish_words();  // appends the closing FINISH and encodes the stream
  void reset_stream();

  AccelDevice& device_;
  AccelConfig config_;
  std::vector<Instruction> stream_;
  DepFlags pending_pop_[3];  // pops to apply to each module's next instruction
  std::map<std::string, KernelInfo> kernels_;
  std::map<std::string, uint32_t> resident_;  // kernel key -> uop SRAM base in this stream
  UopKernel last_alu_kernel_;                 // the kernel of the instruction at last_alu_index_
  size_t last_alu_index_ = SIZE_MAX;          // the stream's last ALU instruction from alu()
  bool finish_rewrites_ = false;
  std::vector<DeviceBuffer> images_;  // load_micro_ops_once's micro-op images
  uint32_t uop_top_ = 0;
  DeviceBuffer insn_buffer_;
  std::vector<DeviceBuffer> sealed_;  // buffers of sealed streams
};

}  // namespace loom::accel
