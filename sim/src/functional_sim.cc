#include "loom/sim/functional_sim.h"

#include "backend_config.h"
#include "commit_record.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <sstream>

#include "loom/accel/action_counts.h"
#include "loom/accel/packing.h"
#include "loom/runtime/error.h"

namespace loom::sim {

using namespace loom::accel;

namespace {

struct SimFailure {
  size_t index;
  std::string message;
};

}  // namespace

// Scratchpads and execution state of one run.
struct FunctionalSim::State {
  const AccelConfig& c;
  FunctionalSim& dev;
  // Scratchpads as bytes, elements packed as in DRAM (accel/packing.h); the accumulator as int32
  // whatever acc_bits is (values wrapped to acc_bits; a 16-bit DRAM entry widened on load).
  std::vector<uint8_t> inp, wgt, out;
  std::vector<int32_t> acc;
  std::vector<uint32_t> uop;
  // Inputs and weights also unpacked, one int16 per element whatever their width, kept in step by
  // the loads (far fewer than GEMM iterations): the GEMM's products of 16-bit operands are pairwise
  // multiply-adds the compiler vectorizes (of 8-bit ones, widening multiplies).
  std::vector<int16_t> inp_wide, wgt_wide;
  std::vector<MicroOp> decoded;  // the running instruction's micro-ops, decoded once
  uint64_t counters[uint32_t(AccelCounter::Count)] = {};
  uint64_t steps = 0;  // micro-op executions so far (GEMM and ALU), against the step limit

  State(const AccelConfig& cfg, FunctionalSim& d)
      : c(cfg),
        dev(d),
        inp(cfg.inp_depth() * cfg.inp_block_bytes()),
        wgt(cfg.wgt_depth() * cfg.wgt_block_bytes()),
        out(cfg.out_depth() * cfg.out_block_bytes()),
        acc(cfg.acc_depth() * cfg.batch * cfg.block_out),
        uop(cfg.uop_depth()),
        inp_wide(size_t(cfg.inp_depth()) * size_t(cfg.batch * cfg.block_in)),
        wgt_wide(size_t(cfg.wgt_depth()) * size_t(cfg.block_out * cfg.block_in)) {}

  [[noreturn]] static void fail(size_t index, const Instruction& i, const std::string& what) {
    throw SimFailure{index, "instruction " + std::to_string(index) + " (" + disassemble(i) + "): " + what};
  }

  // SRAM entry size in bytes and base pointer for a memory type.
  std::pair<int, uint8_t*> sram(MemType m) {
    switch (m) {
      case MemType::Inp:
        return {c.inp_block_bytes(), reinterpret_cast<uint8_t*>(inp.data())};
      case MemType::Wgt:
        return {c.wgt_block_bytes(), reinterpret_cast<uint8_t*>(wgt.data())};
      case MemType::Acc:  // as held here (int32 elements)
        return {c.batch * c.block_out * 4, reinterpret_cast<uint8_t*>(acc.data())};
      case MemType::Out:
        return {c.out_block_bytes(), reinterpret_cast<uint8_t*>(out.data())};
      case MemType::Uop:
        return {AccelConfig::kUopBytes, reinterpret_cast<uint8_t*>(uop.data())};
    }
    return {0, nullptr};
  }

  // Pointer to `count` consecutive DRAM entries (one DMA row), which must lie in one allocation.
  uint8_t* dram(uint64_t entry, int entry_bytes, uint32_t count, size_t index, const Instruction& i) {
    uint64_t addr = entry * uint64_t(entry_bytes), bytes = uint64_t(count) * entry_bytes;
    if (!dev.allocator_.contains(addr, bytes)) {
      std::ostringstream m;
      m << "DMA row 0x" << std::hex << addr << std::dec << " (" << bytes
        << " bytes) is outside allocated device memory";
      fail(index, i, m.str());
    }
    return dev.dram_.get() + (addr - kDramBase);
  }

  void load(const Instruction& i, size_t index) {
    if (i.x_size == 0 || i.y_size == 0) {  // an empty transfer only carries its dependency flags (isa.h)
      ++counters[uint32_t(load_insn_counter(i.mem))];
      return;
    }
    if (i.mem == MemType::Acc && c.acc_bits != 32) return load_narrow_acc(i, index);
    auto [bytes, base] = sram(i.mem);
    uint32_t rows = i.y_pad0 + i.y_size + i.y_pad1, cols = i.x_pad0 + i.x_size + i.x_pad1;
    for (uint32_t r = 0; r < rows; ++r) {
      uint8_t* row = base + uint64_t(i.sram_base + r * cols) * bytes;
      if (r < i.y_pad0 || r >= i.y_pad0 + i.y_size) {
        std::memset(row, 0, uint64_t(cols) * bytes);
        continue;
      }
      std::memset(row, 0, uint64_t(i.x_pad0) * bytes);
      uint64_t entry = uint64_t(i.dram_base) + uint64_t(r - i.y_pad0) * i.x_stride;
      std::memcpy(row + uint64_t(i.x_pad0) * bytes, dram(entry, bytes, i.x_size, index, i), uint64_t(i.x_size) * bytes);
      std::memset(row + uint64_t(i.x_pad0 + i.x_size) * bytes, 0, uint64_t(i.x_pad1) * bytes);
      counters[uint32_t(dma_counter(i.mem))] += uint64_t(i.x_size) * bytes;
    }
    if (i.mem == MemType::Inp)
      unpack_entries(inp, inp_wide, c.inp_block_bytes(), c.batch * c.block_in, c.inp_bits, i.sram_base, rows * cols);
    if (i.mem == MemType::Wgt)
      unpack_entries(wgt, wgt_wide, c.wgt_block_bytes(), c.block_out * c.block_in, c.wgt_bits, i.sram_base,
                     rows * cols);
    counters[uint32_t(pad_counter(i.mem))] += uint64_t(rows) * cols - uint64_t(i.y_size) * i.x_size;
    ++counters[uint32_t(load_insn_counter(i.mem))];
  }

  // Entries [first, first + count) of a packed scratchpad into its unpacked copy.
  static void unpack_entries(const std::vector<uint8_t>& packed, std::vector<int16_t>& unpacked, int entry_bytes,
                             int elements, int bits, uint64_t first, uint64_t count) {
    const uint64_t n = count * uint64_t(elements);
    int16_t* to = &unpacked[first * uint64_t(elements)];
    if (bits == 8) {
      const int8_t* from = reinterpret_cast<const int8_t*>(&packed[first * uint64_t(entry_bytes)]);
      for (uint64_t k = 0; k < n; ++k) to[k] = from[k];
      return;
    }
    for (uint64_t e = 0; e < count; ++e)
      for (int k = 0; k < elements; ++k)
        to[e * uint64_t(elements) + uint64_t(k)] =
            int16_t(packed_element(&packed[(first + e) * uint64_t(entry_bytes)], size_t(k), bits));
  }

  // An accumulator load of acc_bits-wide DRAM entries, each element sign-extended to int32.
  void load_narrow_acc(const Instruction& i, size_t index) {
    const int n = c.batch * c.block_out, dram_bytes = c.acc_block_bytes();
    uint32_t rows = i.y_pad0 + i.y_size + i.y_pad1, cols = i.x_pad0 + i.x_size + i.x_pad1;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t x = 0; x < cols; ++x) {
        int32_t* entry = &acc[(uint64_t(i.sram_base) + uint64_t(r) * cols + x) * n];
        if (r < i.y_pad0 || r >= i.y_pad0 + i.y_size || x < i.x_pad0 || x >= i.x_pad0 + i.x_size) {
          std::fill(entry, entry + n, 0);
          continue;
        }
        uint64_t e = uint64_t(i.dram_base) + uint64_t(r - i.y_pad0) * i.x_stride + (x - i.x_pad0);
        const uint8_t* src = dram(e, dram_bytes, 1, index, i);
        for (int k = 0; k < n; ++k) entry[k] = packed_element(src, size_t(k), c.acc_bits);
      }
    counters[uint32_t(AccelCounter::DmaLoadBytesAcc)] += uint64_t(i.y_size) * i.x_size * dram_bytes;
    counters[uint32_t(AccelCounter::PadEntriesAcc)] += uint64_t(rows) * cols - uint64_t(i.y_size) * i.x_size;
    ++counters[uint32_t(AccelCounter::AccLoadInsns)];
  }

  // An accumulator value as the hardware holds it: wrapped around at acc_bits.
  int32_t wrap_acc(int32_t v) const { return c.acc_bits == 32 ? v : int32_t(int16_t(uint16_t(uint32_t(v)))); }

  void store(const Instruction& i, size_t index) {
    if (i.x_size == 0 || i.y_size == 0) {  // an empty transfer only carries its dependency flags (isa.h)
      ++counters[uint32_t(AccelCounter::StoreInsns)];
      return;
    }
    auto [bytes, base] = sram(MemType::Out);
    for (uint32_t r = 0; r < i.y_size; ++r) {
      uint64_t entry = uint64_t(i.dram_base) + uint64_t(r) * i.x_stride;
      std::memcpy(dram(entry, bytes, i.x_size, index, i), base + uint64_t(i.sram_base + r * i.x_size) * bytes,
                  uint64_t(i.x_size) * bytes);
      counters[uint32_t(AccelCounter::DmaStoreBytes)] += uint64_t(i.x_size) * bytes;
    }
    ++counters[uint32_t(AccelCounter::StoreInsns)];
  }

  // Runs body(dst, src, wgt) for every micro-op in the 2-level loop, range-checking indices.
  template <typename F>
  void uop_loop(const Instruction& i, size_t index, bool uses_wgt, F body) {
    const int64_t src_depth = i.opcode == Opcode::Gemm ? c.inp_depth() : c.acc_depth();
    const int64_t acc_depth = c.acc_depth(), wgt_depth = c.wgt_depth();
    decoded.clear();
    for (uint32_t u = i.uop_begin; u < i.uop_end; ++u) decoded.push_back(decode_uop(uop[u], c));
    for (uint32_t o = 0; o < i.iter_out; ++o)
      for (uint32_t n = 0; n < i.iter_in; ++n)
        for (const MicroOp& op : decoded) {
          if (++steps > dev.step_limit_)
            fail(index, i,
                 "stopped after " + std::to_string(dev.step_limit_) +
                     " micro-op steps; raise the limit with --step-limit (the fsim option \"step_limit\") if the "
                     "stream is legitimately this long");
          uint64_t dst = op.dst + uint64_t(o) * i.dst_factor_out + uint64_t(n) * i.dst_factor_in;
          uint64_t src = op.src + uint64_t(o) * i.src_factor_out + uint64_t(n) * i.src_factor_in;
          uint64_t w = op.wgt + uint64_t(o) * i.wgt_factor_out + uint64_t(n) * i.wgt_factor_in;
          if (dst >= uint64_t(acc_depth))
            fail(
                index, i,
                "accumulator index " + std::to_string(dst) + " out of range (depth " + std::to_string(acc_depth) + ")");
          if (src >= uint64_t(src_depth))
            fail(index, i,
                 "source index " + std::to_string(src) + " out of range (depth " + std::to_string(src_depth) + ")");
          if (uses_wgt && w >= uint64_t(wgt_depth))
            fail(index, i,
                 "weight index " + std::to_string(w) + " out of range (depth " + std::to_string(wgt_depth) + ")");
          body(dst, src, w);
        }
  }

  // The output entry of accumulator entry `dst`: each value's low out_bits bits (the ALU's clamp
  // before a store is what saturates), packed.
  void write_out(uint64_t dst) {
    const int n = c.batch * c.block_out;
    if (c.out_bits == 8) {
      for (int e = 0; e < n; ++e) out[dst * n + e] = uint8_t(acc[dst * n + e]);  // keep the low 8 bits
      return;
    }
    uint8_t* entry = &out[dst * uint64_t(c.out_block_bytes())];
    for (int e = 0; e < n; ++e) set_packed_element(entry, size_t(e), c.out_bits, acc[dst * n + e]);
  }

  void gemm(const Instruction& i, size_t index) {
    const int B = c.batch, BI = c.block_in, BO = c.block_out;
    uop_loop(i, index, !i.reset, [&](uint64_t dst, uint64_t src, uint64_t w) {
      int32_t* a = &acc[dst * B * BO];
      if (i.reset) {
        std::fill(a, a + B * BO, 0);
      } else {
        const int16_t* xs = &inp_wide[src * uint64_t(B * BI)];
        const int16_t* ks = &wgt_wide[w * uint64_t(BO * BI)];
        for (int b = 0; b < B; ++b)
          for (int o = 0; o < BO; ++o) {
            int32_t sum = 0;
            for (int q = 0; q < BI; ++q) sum += int32_t(xs[b * BI + q]) * int32_t(ks[o * BI + q]);
            a[b * BO + o] = wrap_acc(int32_t(uint32_t(a[b * BO + o]) + uint32_t(sum)));  // wrap-around
          }
        counters[uint32_t(AccelCounter::GemmMacs)] += uint64_t(B) * BO * BI;
      }
      if (i.reset) ++counters[uint32_t(AccelCounter::GemmResetSteps)];
      write_out(dst);
    });
    ++counters[uint32_t(AccelCounter::GemmInsns)];
  }

  static int32_t alu_apply(AluOp op, int32_t a, int32_t b) {
    switch (op) {
      case AluOp::Min:
        return std::min(a, b);
      case AluOp::Max:
        return std::max(a, b);
      case AluOp::Add:
        return int32_t(uint32_t(a) + uint32_t(b));
      // A negative amount shifts left; amounts saturate at 31 either way (-b would overflow for INT32_MIN).
      case AluOp::Shr:
        return b >= 0 ? (a >> std::min(b, 31)) : int32_t(uint32_t(a) << (b < -31 ? 31 : -b));
      case AluOp::Mul:
        return int32_t(uint32_t(a) * uint32_t(b));
      case AluOp::Mov:
        return b;
      case AluOp::Clip:
        return std::min(std::max(a, clip_lo(b)), clip_hi(b));
      case AluOp::ShrSat: {
        const ShrSatImm f = ShrSatImm::decode(b);
        return std::min(std::max(a >> f.shift, f.lo()), f.hi());
      }
    }
    return a;
  }

  void alu(const Instruction& i, size_t index) {
    const int n = c.batch * c.block_out;
    // SHRSAT: each iteration reads its entry before the write of the iteration just ahead of it
    // lands (isa.h), so that write waits in `held` until the next iteration has read.
    const bool write_behind = i.alu_op == AluOp::ShrSat;
    std::vector<int32_t> held(write_behind ? size_t(n) : 0), next(held.size());
    std::optional<uint64_t> held_dst;
    auto land = [&] {
      if (!held_dst) return;
      std::copy(held.begin(), held.end(), &acc[*held_dst * n]);
      write_out(*held_dst);
    };
    uop_loop(i, index, false, [&](uint64_t dst, uint64_t src, uint64_t) {
      if (write_behind) {
        for (int e = 0; e < n; ++e) next[size_t(e)] = wrap_acc(alu_apply(i.alu_op, acc[dst * n + e], i.imm));
        land();
        held.swap(next);
        held_dst = dst;
      } else {
        for (int e = 0; e < n; ++e)
          acc[dst * n + e] = wrap_acc(alu_apply(i.alu_op, acc[dst * n + e], i.use_imm ? i.imm : acc[src * n + e]));
        write_out(dst);
      }
      counters[uint32_t(AccelCounter::AluOps)] += n;
      if (reads_two_entries(i)) counters[uint32_t(AccelCounter::AluVectorOps)] += n;
    });
    land();
    ++counters[uint32_t(AccelCounter::AluInsns)];
  }
};

FunctionalSim::FunctionalSim(AccelConfig config, uint64_t dram_bytes)
    : config_(std::move(config)),
      dram_bytes_(dram_bytes),
      dram_(new uint8_t[dram_bytes]),
      allocator_(kDramBase, dram_bytes),
      regs_(kAccelRegsEnd / 4, 0) {
  config_.validate();
}

// New device memory reads as zero, so simulations are reproducible run to run.
uint64_t FunctionalSim::alloc(uint64_t bytes, uint64_t alignment) {
  uint64_t a = allocator_.alloc(bytes, alignment, name());
  std::memset(dram_.get() + (a - kDramBase), 0, bytes);
  return a;
}
void FunctionalSim::free(uint64_t addr) { allocator_.free(addr, name()); }

uint8_t* FunctionalSim::dram_ptr(uint64_t addr, uint64_t bytes, const char* what) {
  if (!allocator_.contains(addr, bytes))
    LOOM_THROW(DeviceError, name(), ": ", what, " of ", bytes, " bytes at 0x", std::hex, addr,
               " is outside allocated device memory");
  return dram_.get() + (addr - kDramBase);
}

void FunctionalSim::write(uint64_t addr, const void* src, uint64_t bytes) {
  std::memcpy(dram_ptr(addr, bytes, "write"), src, bytes);
}
void FunctionalSim::read(uint64_t addr, void* dst, uint64_t bytes) {
  std::memcpy(dst, dram_ptr(addr, bytes, "read"), bytes);
}

void FunctionalSim::write_reg(uint32_t offset, uint32_t value) {
  if (offset % 4 || offset / 4 >= regs_.size())
    LOOM_THROW(DeviceError, name(), ": no register at offset 0x", std::hex, offset);
  if (offset == reg::kStatus || offset >= reg::kCyclesLo)
    LOOM_THROW(DeviceError, name(), ": register 0x", std::hex, offset, " is read-only");
  switch (offset) {
    case reg::kControl:  // only START is writable; a run is synchronous, so it ends before this returns
      if (value & reg::kStart) run();
      return;
    case reg::kGie:
      regs_[offset / 4] = value & 1;
      return;
    case reg::kIer:
      regs_[offset / 4] = value & (reg::kIrqDone | reg::kIrqReady);
      return;
    case reg::kIsr:  // toggle on write
      regs_[offset / 4] ^= value & (reg::kIrqDone | reg::kIrqReady);
      return;
    default:
      regs_[offset / 4] = value;
  }
}

uint32_t FunctionalSim::read_reg(uint32_t offset) {
  if (offset % 4 || offset / 4 >= regs_.size())
    LOOM_THROW(DeviceError, name(), ": no register at offset 0x", std::hex, offset);
  uint32_t v = regs_[offset / 4];
  if (offset == reg::kControl) {
    v |= reg::kApIdle;                                     // never running when read
    regs_[offset / 4] &= ~(reg::kApDone | reg::kApReady);  // cleared when read
  }
  return v;
}

std::vector<CommitRecord> FunctionalSim::take_commits() { return take_sorted(commits_); }

void FunctionalSim::run() {
  ++runs_;
  run_label_ = std::move(next_label_);
  next_label_.clear();
  regs_[reg::kStatus / 4] = 0;
  regs_[reg::kControl / 4] = 0;
  error_.clear();
  uint64_t insn_addr = uint64_t(regs_[reg::kInsnAddrHi / 4]) << 32 | regs_[reg::kInsnAddrLo / 4];
  uint32_t count = regs_[reg::kInsnCount / 4];
  auto st = std::make_unique<State>(config_, *this);
  IsaLayout layout(config_);
  try {
    // Fetch: decode and check every instruction, then hand each to its module's queue.
    std::vector<Instruction> insns;  // grown while fetching: a bogus INSN_COUNT fails at its first bad fetch
    std::deque<size_t> queue[3];
    bool finish = false;
    if (insn_addr % sizeof(InsnWord)) {
      std::ostringstream m;
      m << "the instruction stream's address 0x" << std::hex << insn_addr << " is not " << std::dec << sizeof(InsnWord)
        << "-byte aligned";
      throw SimFailure{0, m.str()};
    }
    for (uint32_t k = 0; k < count; ++k) {
      InsnWord w;
      if (insn_addr > UINT64_MAX - 16ull * (k + 1ull) || !allocator_.contains(insn_addr + 16ull * k, 16))
        throw SimFailure{k, "instruction " + std::to_string(k) + ": fetch address is outside allocated device memory"};
      std::memcpy(w.data(), dram_.get() + (insn_addr + 16ull * k - kDramBase), 16);
      try {
        insns.push_back(decode(w, layout, k));
        check_instruction(insns[k], config_, k);
      } catch (const IsaError& e) {
        throw SimFailure{k, e.what()};
      }
      finish |= insns[k].opcode == Opcode::Finish;
      queue[uint32_t(insns[k].module())].push_back(k);
    }
    if (!finish) throw SimFailure{count, "the stream has no FINISH instruction"};
    // Token queues: load->compute, compute->load, compute->store, store->compute.
    int64_t l2c = 0, c2l = 0, c2s = 0, s2c = 0;
    auto tokens_for = [&](Module m, bool prev) -> int64_t& {
      if (m == Module::Load) return c2l;  // load's next is compute
      if (m == Module::Compute) return prev ? l2c : s2c;
      return c2s;  // store's prev is compute
    };
    auto ready = [&](int m) {
      if (queue[m].empty()) return false;
      const Instruction& i = insns[queue[m].front()];
      return !(i.dep.pop_prev && tokens_for(Module(m), true) == 0) &&
             !(i.dep.pop_next && tokens_for(Module(m), false) == 0);
    };
    auto step = [&](int m) {
      size_t k = queue[m].front();
      const Instruction& i = insns[k];
      Module mod = Module(m);
      if (i.dep.pop_prev) --tokens_for(mod, true);
      if (i.dep.pop_next) --tokens_for(mod, false);
      switch (i.opcode) {
        case Opcode::Load:
          st->load(i, k);
          break;
        case Opcode::Store:
          st->store(i, k);
          break;
        case Opcode::Gemm:
          st->gemm(i, k);
          break;
        case Opcode::Alu:
          st->alu(i, k);
          break;
        case Opcode::Finish:
          break;
      }
      if (i.dep.push_prev) ++(mod == Module::Compute ? c2l : s2c);
      if (i.dep.push_next) ++(mod == Module::Load ? l2c : c2s);
      if (record_commits_) {
        auto scratchpad = [&](MemType m) {
          auto [bytes, base] = st->sram(m);
          const uint64_t depth = uint64_t(buffer_depth(config_, m));
          return ScratchpadView{base, size_t(depth * uint64_t(bytes))};  // fsim's own vectors, no copy
        };
        auto dram = [&](uint64_t addr, uint64_t bytes) -> const uint8_t* {
          return allocator_.contains(addr, bytes) ? dram_.get() + (addr - kDramBase) : nullptr;
        };
        if (auto r = make_commit_record(i, uint32_t(k), config_, scratchpad, dram)) {
          r->run = runs_;
          r->label = run_label_;
          r->tokens = {uint32_t(l2c), uint32_t(c2l), uint32_t(c2s), uint32_t(s2c)};
          commits_.push_back(std::move(*r));
        }
      }
      queue[m].pop_front();
    };
    // The modules are independent hardware: any interleaving the tokens allow is legal. The
    // policy picks one, so tests can check that a stream's tokens are sufficient.
    std::mt19937_64 rng(interleave_seed_);
    for (;;) {
      int ready_modules[3], n_ready = 0;
      for (int m = 0; m < 3; ++m)
        if (ready(m)) ready_modules[n_ready++] = m;
      if (n_ready == 0) break;
      int m = interleave_ == Interleave::LoadFirst    ? ready_modules[0]
              : interleave_ == Interleave::StoreFirst ? ready_modules[n_ready - 1]
                                                      : ready_modules[rng() % n_ready];
      step(m);
    }
    if (!(queue[0].empty() && queue[1].empty() && queue[2].empty())) {
      std::ostringstream m;
      m << "dependency deadlock: ";
      size_t first = count;
      for (int q = 0; q < 3; ++q) {
        if (queue[q].empty()) continue;
        size_t k = queue[q].front();
        first = std::min(first, k);
        m << to_string(Module(q)) << " module waits at instruction " << k << " (" << disassemble(insns[k]) << "); ";
      }
      m << "tokens l2c=" << l2c << " c2l=" << c2l << " c2s=" << c2s << " s2c=" << s2c;
      throw SimFailure{first, m.str()};
    }
    regs_[reg::kStatus / 4] = reg::kDone;
  } catch (const SimFailure& f) {
    error_ = f.message;
    regs_[reg::kErrorIndex / 4] = uint32_t(f.index);
    regs_[reg::kStatus / 4] = reg::kError;
  }
  for (uint32_t k = 0; k < uint32_t(AccelCounter::Count); ++k) {
    regs_[counter_reg(AccelCounter(k)) / 4] = uint32_t(st->counters[k]);
    regs_[counter_reg(AccelCounter(k)) / 4 + 1] = uint32_t(st->counters[k] >> 32);
  }
  regs_[reg::kCyclesLo / 4] = regs_[reg::kCyclesHi / 4] = 0;  // untimed
  regs_[reg::kControl / 4] = reg::kApDone | reg::kApReady;
  regs_[reg::kIsr / 4] |= reg::kIrqDone | reg::kIrqReady;
}

// The config JSON may carry "fsim": {"interleave": "load_first" | "store_first" | "random", "seed": N,
// "step_limit": N}: the order in which the three modules take turns (every legal order must give
// the same result), and the number of micro-op steps after which a run fails.
namespace {

struct FsimOptions {
  uint64_t step_limit = 0;  // 0: the simulator's default
  std::optional<FunctionalSim::Interleave> interleave;
  uint64_t seed = 1;
};

BackendOptionSchema fsim_option_schema() {
  using O = BackendOption;
  return {
      O::count("step_limit", 1, 1e15, "fail a run after this many micro-op steps", "1e9"),
      O::choice("interleave", {"load_first", "store_first", "random"},
                "the order of the load, compute and store queues' instructions when more than one could run (any "
                "order the tokens allow must give the same results)"),
      O::count("seed", 0, 1e18, "the random interleaving's seed", "1")
          .needing("interleave")
          .with_flag("--interleave-seed"),
  };
}

// The one reader of fsim's options: the factory and the check (run before any job) both use it.
FsimOptions fsim_options(const nlohmann::json& section) {
  BackendOptionValues v = read_backend_options("fsim", section.dump());
  FsimOptions o;
  o.step_limit = v.count("step_limit", 0);
  if (v.has("interleave")) {
    std::string p = v.text("interleave", "");
    o.interleave = p == "load_first"    ? FunctionalSim::Interleave::LoadFirst
                   : p == "store_first" ? FunctionalSim::Interleave::StoreFirst
                                        : FunctionalSim::Interleave::Random;
  }
  o.seed = v.count("seed", 1);
  return o;
}

}  // namespace

void register_functional_sim() {
  register_accel_backend_options("fsim", fsim_option_schema());
  register_accel_backend("fsim", [](const std::string& json) {
    BackendConfig b = parse_backend_config(json, "fsim");
    FsimOptions o = fsim_options(b.options);
    auto dev = std::make_unique<FunctionalSim>(b.config);
    if (o.step_limit) dev->set_step_limit(o.step_limit);
    if (o.interleave) dev->set_interleave(*o.interleave, o.seed);
    return dev;
  });
  register_accel_backend_check(
      "fsim", [](const std::string& json) { fsim_options(parse_backend_config(json, "fsim").options); });
}

namespace {
const bool registered = (register_functional_sim(), true);
}

}  // namespace loom::sim
