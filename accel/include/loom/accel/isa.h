// The accelerator ISA: 128-bit instructions (LOAD, STORE, GEMM, ALU, FINISH), 32-bit micro-ops,
// and the field layout derived from an AccelConfig. Instructions flow through three modules:
// load (LOAD of inputs/weights), compute (LOAD of micro-ops/accumulators, GEMM, ALU, FINISH) and
// store (STORE); each instruction may pop a token from / push a token to its neighbours.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/accel/config.h"

namespace loom::accel {

enum class Opcode : uint8_t { Load = 0, Store = 1, Gemm = 2, Finish = 3, Alu = 4 };
enum class MemType : uint8_t { Uop = 0, Wgt = 1, Inp = 2, Acc = 3, Out = 4 };
// ALU operations on accumulator entries: dst = op(dst, operand), the operand an immediate or the
// src entry. MOV copies the operand (dst = imm, or dst = src: one accumulator read either way);
// CLIP takes an immediate only and clamps, dst = min(max(dst, lo), hi), with lo its low and hi
// its high signed byte (clip_imm), the requantization's range in one pass. SHRSAT takes an
// immediate only and is a requantization's shift and clamp in one pass: dst = clamp(dst >> s, lo,
// hi), an arithmetic shift by s in [0, 31] and a clamp to the range of a w-bit signed integer
// (w in [1, 16]: [-2^(w-1), 2^(w-1) - 1]) or its non-negative part ([0, 2^(w-1) - 1]). Each
// SHRSAT iteration reads its entry before the write of the iteration just ahead of it lands: an
// iteration naming the entry the one before it named reads what that one read (the core saturates
// as it writes, and does not forward that write; requantization names each entry once).
enum class AluOp : uint8_t { Min = 0, Max = 1, Add = 2, Shr = 3, Mul = 4, Mov = 5, Clip = 6, ShrSat = 7 };
// The CLIP immediate for [lo, hi]; both in [-128, 127].
int32_t clip_imm(int lo, int hi);
// CLIP's bounds from its immediate.
inline int32_t clip_lo(int32_t imm) { return int8_t(uint32_t(imm) & 0xff); }
inline int32_t clip_hi(int32_t imm) { return int8_t((uint32_t(imm) >> 8) & 0xff); }
// SHRSAT's immediate: bits [4:0] the shift, [8:5] the width minus one, [9] the non-negative
// range; bits [15:10] are reserved (zero).
struct ShrSatImm {
  static constexpr int kShiftBits = 5, kWidthBits = 4, kReservedShift = 10;
  int shift = 0, width = 8;
  bool non_negative = false;
  int32_t lo() const { return non_negative ? 0 : -(int32_t(1) << (width - 1)); }
  int32_t hi() const { return (int32_t(1) << (width - 1)) - 1; }
  int32_t encode() const;  // throws IsaError for a shift or width out of range
  // The fields of an immediate whose reserved bits are zero (the caller checks them).
  static ShrSatImm decode(int32_t imm);
  static bool reserved_set(int32_t imm) { return (uint32_t(imm) & 0xffff) >> kReservedShift != 0; }
  // The SHRSAT of a shift by `shift` followed by a clamp to [lo, hi], when there is one.
  static bool from_clamp(int shift, int32_t lo, int32_t hi, ShrSatImm* out);
};
enum class Module : uint8_t { Load = 0, Compute = 1, Store = 2 };

const char* to_string(Opcode o);
const char* to_string(MemType m);
// Bytes of one entry of a scratchpad (DMA addresses count these).
int entry_bytes(const AccelConfig& config, MemType m);
const char* to_string(AluOp a);
const char* to_string(Module m);

struct DepFlags {
  bool pop_prev = false, pop_next = false, push_prev = false, push_next = false;
};

// One decoded instruction (fields not used by its opcode are zero).
struct Instruction {
  Opcode opcode = Opcode::Finish;
  DepFlags dep;
  // LOAD / STORE: a 2-D strided block copy, DRAM addresses in units of the buffer's entry.
  MemType mem = MemType::Inp;
  uint32_t sram_base = 0;
  uint32_t dram_base = 0;
  uint32_t y_size = 0, x_size = 0, x_stride = 0;
  uint32_t y_pad0 = 0, y_pad1 = 0, x_pad0 = 0, x_pad1 = 0;  // LOAD only: zero padding
  // GEMM / ALU: micro-ops [uop_begin, uop_end) run inside a 2-level loop.
  bool reset = false;  // GEMM: zero the accumulators instead of accumulating
  uint32_t uop_begin = 0, uop_end = 0;
  uint32_t iter_out = 0, iter_in = 0;
  uint32_t dst_factor_out = 0, dst_factor_in = 0, src_factor_out = 0, src_factor_in = 0, wgt_factor_out = 0,
           wgt_factor_in = 0;
  AluOp alu_op = AluOp::Min;
  bool use_imm = false;
  int32_t imm = 0;

  // The module that executes it.
  Module module() const;
  bool operator==(const Instruction& o) const;
};
// An ALU instruction whose every iteration reads two accumulator entries (destination and
// operand): two cycles each on the one read port; the counters' alu_vector_ops.
inline bool reads_two_entries(const Instruction& i) {
  return i.opcode == Opcode::Alu && !i.use_imm && i.alu_op != AluOp::Mov;
}

struct MicroOp {
  uint32_t dst = 0, src = 0, wgt = 0;  // accumulator, input (or accumulator for ALU), weight entries
  bool operator==(const MicroOp& o) const { return dst == o.dst && src == o.src && wgt == o.wgt; }
};

using InsnWord = std::array<uint64_t, 2>;  // little-endian 128-bit instruction

// Field layout of one config: which bits of the 128-bit word hold which field. The widths of the
// SRAM-index fields come from the config; the others are fixed by the ISA (VTA's values). The
// field order lives in one place (isa.cc), shared by encode, decode and fields().
struct IsaLayout {
  static constexpr int kInsnBits = 128, kOpcodeBits = 3, kMemTypeBits = 3, kAluOpBits = 3;
  static constexpr int kDramBits = 32, kSizeBits = 16, kStrideBits = 16, kPadBits = 4, kLoopBits = 14, kImmBits = 16;

  explicit IsaLayout(const AccelConfig& c);
  AccelConfig config;
  int sram_bits;                                          // LOAD/STORE sram_base: indexes the deepest scratchpad
  int uop_begin_bits, uop_end_bits;                       // uop_end is one past the last micro-op, so one bit wider
  int dst_factor_bits, src_factor_bits, wgt_factor_bits;  // as wide as the micro-op fields they scale

  struct Field {
    std::string name;
    int offset, width;
  };
  std::vector<Field> fields(Opcode op) const;  // in bit order, LSB first
  int insn_bits(Opcode op) const;              // bits used by that instruction format
};

InsnWord encode(const Instruction& insn, const IsaLayout& layout);
// Throws IsaError naming `index` and the field for malformed words (invalid opcode, memory type or
// ALU opcode, reserved bits set). encode throws IsaError naming the field that does not fit.
Instruction decode(const InsnWord& word, const IsaLayout& layout, size_t index);
uint32_t encode_uop(const MicroOp& uop, const AccelConfig& config);
MicroOp decode_uop(uint32_t word, const AccelConfig& config);

// A scratchpad's depth in entries, for memory type `m`.
int64_t buffer_depth(const AccelConfig& config, MemType m);

// Checks field values against the config (SRAM bases and extents, micro-op ranges, loop extents,
// shift amounts, dependency flags a module cannot use, memory types an opcode cannot use). Throws
// IsaError naming `index` and the field.
void check_instruction(const Instruction& insn, const AccelConfig& config, size_t index);

// One readable line, e.g. "LOAD  inp  sram=0 dram=0x40 y=4 x=10 stride=8 pad=(1,0,1,1) deps=[pop_next]".
std::string disassemble(const Instruction& insn);
std::string disassemble(const std::vector<Instruction>& stream);

}  // namespace loom::accel
