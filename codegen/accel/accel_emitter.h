// Walks a lowered accelerator function with concrete loop values and emits driver calls
// (internal to the accelerator backend). One class, one file per part: the loop walker
// (accel_emitter.cc), DMA lowering (accel_dma.cc), GEMM folding (accel_gemm.cc), ALU nests
// (accel_alu.cc) and the hazard tracker (accel_hazards.cc).
#pragma once
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/accel/driver.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/stmt.h"
#include "reset_presets.h"

namespace loom::codegen::accel_backend {

// IR helpers shared by the emitter's rewrites (defined in accel_bias_init.cc).
// The accelerator GEMM call ending a loop nest (any depth) or a lone call, or nullopt.
std::optional<ir::TensorIntrinCall> gemm_of(const ir::Stmt& s);
// The buffer of address_of(buffer[index]), else null.
const ir::BufferNode* buffer_of(const ir::Expr& address);
// The destination buffer of a lone dma_copy statement, else null.
const ir::BufferNode* dma_destination(const ir::Stmt& s);
// True when `s` uses the buffer at all.
bool touches(const ir::Stmt& s, const ir::BufferNode* b);

class Emitter {
 public:
  // dram_bits: each argument's element width in device memory (accel_arg_bits; packed when narrow).
  Emitter(accel::Driver& drv, std::map<const ir::BufferNode*, accel::DeviceBuffer> dram,
          std::map<const ir::BufferNode*, int> dram_bits, std::string func_name);
  void run(const ir::Stmt& body);

 private:
  struct Sram {
    accel::MemType mem;
    uint32_t base = 0, entries = 0;
    bool dead = false;  // reused in place by a later stage
  };
  struct Operand {  // an element address: on chip (entry index) or in device memory (bytes)
    const ir::BufferNode* buffer = nullptr;
    const Sram* sram = nullptr;
    int64_t element = 0;
    uint64_t dram_base = 0;  // device memory: the argument's address and element width
    int dram_bits = 8;
  };
  // The byte address of element `o.element + offset` of a device-memory operand; fails when packed
  // elements put it inside a byte.
  uint64_t dram_address(const Operand& o, int64_t offset, const std::string& what) const;
  struct Dim {
    int64_t extent, dst_stride, src_stride, before, after;
  };
  struct TwoD {
    std::array<int64_t, 5> x, y;  // extent, dst stride, src stride, pad before, pad after
    bool has_y;
    std::vector<std::array<int64_t, 5>> outer;  // dimensions beyond two: one DMA per point
  };
  // Calls f(dst element offset, src element offset) for every point of t.outer.
  void for_each_outer(const TwoD& t, const std::function<void(int64_t, int64_t)>& f) const;
  TwoD two_d(const std::vector<Dim>& dims, int64_t entry, const std::string& what) const;

  void exec(const ir::Stmt& s);
  void exec_for(const ir::ForNode* op);
  // Virtual threads: each context gets its own scratchpad buffers, and runs of leaf operations
  // (DMA, GEMM nest, ALU nest) are emitted context by context, so one context's loads overlap
  // the other's compute (see lockstep in the .cc).
  void exec_vthread(const ir::ForNode* op);
  void lockstep(const ir::Stmt& s);
  void gather(const ir::Stmt& s, std::vector<ir::Stmt>& run, std::vector<const ir::AllocateNode*>& allocated);
  // acc_loads_first: the run's leading accumulator loads (a bias) run for every context before the
  // rest runs context by context.
  void flush_run(std::vector<ir::Stmt>& run, bool acc_loads_first = false);
  static bool loads_accumulators(const ir::Stmt& leaf);  // a DMA into an accumulator buffer
  bool only_leaves(const ir::Stmt& s) const;             // a loop body lockstep runs as one run
  // Loops whose last iteration joined the run after them, their variables held until it runs.
  std::vector<const ir::VarNode*> held_loop_vars_;
  int loops_past_first_ = 0;  // loops around, inside the virtual threads, past their first iteration
  void allocate_context_buffers(const ir::AllocateNode* a);
  void release_context_buffers(const ir::AllocateNode* a);
  std::set<const ir::AllocateNode*> in_place_;  // context allocations that alias their source
  const ir::VarNode* vthread_var_ = nullptr;
  int64_t vthread_extent_ = 0;
  std::vector<std::map<const ir::BufferNode*, Sram>> context_sram_;
  void exec_allocate(const ir::AllocateNode* op);
  struct Placement {
    accel::MemType mem;
    int slot;  // index into top_
    uint32_t entries;
    int64_t depth;
  };
  Placement scratchpad_of(const ir::AllocateNode* op) const;  // which scratchpad, how many entries
  uint32_t sram_entries(const ir::AllocateNode* op) const { return scratchpad_of(op).entries; }
  const ir::BufferNode* in_place_source(const ir::AllocateNode* op, const ir::Stmt& first) const;
  void exec_call(const ir::CallNode* call);
  void dma_copy(const ir::DmaCopy& copy);
  void load(const Operand& dst, const Operand& src, std::vector<Dim> dims);
  // Accumulator LOADs kept on chip: one identical to an earlier LOAD whose entries nothing has
  // written since is not emitted again (a convolution's bias, loaded by every tile of the same
  // output channels). The compute module runs accumulator LOADs, so each one is a DMA latency the
  // GEMMs wait for. No LOAD reads bytes a STORE wrote (refuse_reading_stored), so device memory
  // still holds what the first LOAD read.
  std::map<std::array<uint64_t, 9>, int64_t> held_acc_loads_;  // the LOAD's fields -> its index
  bool acc_load_held(int64_t index, uint32_t base, uint32_t entries);
  // Device-memory bytes each of the kernel's STOREs wrote, [begin, end); a LOAD of any of them is a
  // CodegenError naming `what`.
  std::vector<std::pair<uint64_t, uint64_t>> stored_;
  void refuse_reading_stored(uint64_t begin, uint64_t end, const std::string& what) const;
  // The end of the device-memory bytes a DMA of `rows` rows of `cols` entries of `mem`, rows
  // `stride` entries apart, covers from `addr`.
  uint64_t dma_end(uint64_t addr, uint32_t rows, uint32_t cols, uint32_t stride, accel::MemType mem) const;
  void store(const Operand& dst, const Operand& src, std::vector<Dim> dims);
  static std::optional<ir::TensorIntrinCall> as_gemm_call(const ir::CallNode* call);  // an accel.gemm part, or nullopt
  void gemm(const ir::TensorIntrinCall& call, const std::vector<const ir::ForNode*>& unrolled,
            const std::vector<const ir::ForNode*>& loops);
  // One GEMM instruction's micro-op kernels: `zero` is the reset a full GEMM (the whole reduction
  // in one call) starts with.
  struct CapturedGemm {
    accel::UopKernel zero, kernel;
    bool full = false, reset = false;
  };
  void emit_gemm(const CapturedGemm& g);
  std::vector<CapturedGemm>* capture_ = nullptr;  // set: gemm() collects its instructions here instead
  void for_each_point(const std::vector<const ir::ForNode*>& loops, const std::function<void()>& f);
  static const ir::CallNode* gemm_nest_call(const ir::ForNode* f);
  bool lockstep_leaf(const ir::Stmt& s) const;
  static constexpr int kMaxGemmNest = 6;            // loops folded into one GEMM instruction
  static constexpr int64_t kMaxUnrolledUops = 256;  // micro-ops per kernel from unrolled loops
  bool try_fold_gemm(const ir::ForNode* op);
  // An ALU nest's instruction: its operation, the entries of destination, left and right operand
  // at the loops' start, and up to two loops outside an entry (extent, then the three steps).
  struct AluNest {
    accel::AluOp op;
    bool use_imm;
    int64_t imm;
    bool operation;  // false: a plain copy, dst = lhs
    bool has_rhs;
    int64_t dst0, lhs0, rhs0;
    std::vector<std::array<int64_t, 4>> loops;
  };
  // with_destination false: before the destination is allocated (dst0 is then -1).
  AluNest alu_nest_shape(const ir::Stmt& nest, bool with_destination = true);
  // The nest's kernel with the destination steps of operand `dst` and the source steps of `src`
  // (0 destination, 1 left, 2 right operand; -1: no source).
  accel::UopKernel alu_kernel(const AluNest& n, int dst, int src) const;
  void alu_nest(const ir::Stmt& nest);

  // A leaf of the lowered function (DMA, GEMM nest, ALU nest) with the host loops around it, in
  // program order.
  struct Leaf {
    ir::Stmt stmt;
    std::vector<const ir::ForNode*> loops;  // outermost first
  };
  static std::vector<Leaf> leaves_of(const ir::Stmt& body);

  // Bias presets (accel_bias_init.cc): a GEMM reset nest whose accumulators a later ALU nest adds
  // a bias to (loaded before the reset, only GEMM updates of them in between) becomes a MOV of
  // the bias into them, and the ADD is dropped: the GEMMs accumulate onto the bias.
  // The body with each such bias's load moved before the reset (where lowering put it after the
  // GEMMs), so that find_bias_presets can find it.
  static ir::Stmt hoist_bias_loads(const ir::Stmt& body);
  void find_bias_presets(const ir::Stmt& body);
  bool emit_bias_preset(const ir::Stmt& reset, const ir::Stmt& add_nest);
  std::map<const ir::StmtNode*, ir::Stmt>
      bias_preset_;  // reset (nest or call) -> the ALU nest (its body) adding the bias
  // The virtual thread being emitted (0 outside virtual threads).
  int64_t context() const { return vthread_var_ ? env_.at(vthread_var_) : 0; }
  std::set<std::pair<const ir::StmtNode*, int64_t>> bias_applied_;  // (ALU nest body, context) whose ADD a MOV replaced

  // Accumulated adds (accel_add_accumulate.cc): an ALU nest adding two accumulator buffers, one of
  // them written by a lone full GEMM nest whose operands nothing changes in between, gets that GEMM
  // emitted right before it, accumulating onto the other operand's entries (no reset), and the ADD
  // becomes at most a MOV; the GEMM is not emitted where it stands.
  void find_accumulated_adds(const ir::Stmt& body);
  // False when the entries do not match one for one: the GEMM was emitted as it was, the ADD follows.
  bool emit_accumulated_add(const ir::Stmt& nest, const ir::Stmt& gemm_leaf);
  std::map<const ir::StmtNode*, ir::Stmt> accumulated_add_;  // ALU nest body -> the GEMM leaf it accumulates
  std::set<const ir::StmtNode*> deferred_gemm_;              // those GEMM leaves

  // Rounding presets (accel_round_preset.cc): a GEMM reset whose accumulators get an immediate
  // added in place (a requantization's rounding constant) before anything but GEMM updates touches
  // them becomes a MOV of that immediate (driver preset_reset), and the ADD is not emitted: the
  // accumulators' addition wraps around, so adding the constant first or last is the same.
  // Every GEMM reset is noted, every other instruction that reads or writes accumulators touches
  // the entries (ALU instructions go through alu(), accumulator LOADs call resets_.touch).
  void note_reset(const accel::UopKernel& zero);
  void alu(const accel::UopKernel& k, accel::AluOp op, bool use_imm, int32_t imm = 0);
  // True when the in-place ADD of an immediate `k` describes was folded into the resets before it.
  bool emit_round_preset(const accel::UopKernel& k, int32_t imm);
  ResetPresets resets_;

  // Dependency tokens from hazards: before emitting an instruction of module `m` that reads and
  // writes these scratchpad entries, wait (pop) for the latest instruction of a neighbouring
  // module it conflicts with (read-after-write, write-after-read, write-after-write), which gets
  // the matching push; afterwards record the accesses. Only real conflicts synchronize, so a
  // context whose buffers differ runs ahead (virtual threads overlap).
  struct Access {
    std::vector<std::pair<accel::MemType, uint32_t>> reads, writes;  // (buffer, entry)
  };
  void sync_before(accel::Module m, const Access& a);
  Access kernel_access(const accel::UopKernel& k, bool gemm_reads) const;
  // The entries one micro-op field walks over a kernel's loops, iteration by iteration: dst (the
  // accumulators and their out copies), src (inputs for GEMM, accumulators for ALU) or wgt.
  using UopField = accel::UopKernel::Field;
  void record_after(accel::Module m, const Access& a);
  struct EntryState {
    int64_t last_write = -1;
    accel::Module writer = accel::Module::Load;
    int64_t last_read[3] = {-1, -1, -1};
  };
  EntryState& entry_state(accel::MemType mem, uint32_t entry);
  std::vector<EntryState> hazards_[5];                                 // per memory type, indexed by scratchpad entry
  int64_t synced_[3][3] = {{-1, -1, -1}, {-1, -1, -1}, {-1, -1, -1}};  // [from][to]: last instruction waited for

  int64_t eval(const ir::Expr& e) const;
  Operand operand(const ir::Expr& address_of) const;
  uint32_t entry_of(const Operand& o, const char* what) const;
  int elements_per_entry(accel::MemType m) const;
  [[noreturn]] void fail(const std::string& what) const;

  accel::Driver& drv_;
  const accel::AccelConfig& c_;
  std::map<const ir::BufferNode*, accel::DeviceBuffer> dram_;
  std::map<const ir::BufferNode*, int> dram_bits_;
  std::map<const ir::BufferNode*, Sram> sram_;
  std::map<const ir::VarNode*, int64_t> env_;
  uint32_t top_[3] = {0, 0, 0};  // bump allocators: inp, wgt, acc
  std::string func_;
};

}  // namespace loom::codegen::accel_backend
