#include "loom/accel/isa.h"

#include <sstream>
#include <tuple>
#include <type_traits>

#include "loom/runtime/error.h"

namespace loom::accel {

const char* to_string(Opcode o) {
  switch (o) {
    case Opcode::Load:
      return "LOAD";
    case Opcode::Store:
      return "STORE";
    case Opcode::Gemm:
      return "GEMM";
    case Opcode::Finish:
      return "FINISH";
    case Opcode::Alu:
      return "ALU";
  }
  return "?";
}
int entry_bytes(const AccelConfig& c, MemType m) {
  switch (m) {
    case MemType::Uop:
      return AccelConfig::kUopBytes;
    case MemType::Wgt:
      return c.wgt_block_bytes();
    case MemType::Inp:
      return c.inp_block_bytes();
    case MemType::Acc:
      return c.acc_block_bytes();
    case MemType::Out:
      return c.out_block_bytes();
  }
  return AccelConfig::kUopBytes;
}

const char* to_string(MemType m) {
  switch (m) {
    case MemType::Uop:
      return "uop";
    case MemType::Wgt:
      return "wgt";
    case MemType::Inp:
      return "inp";
    case MemType::Acc:
      return "acc";
    case MemType::Out:
      return "out";
  }
  return "?";
}
int32_t clip_imm(int lo, int hi) {
  if (lo < -128 || lo > 127 || hi < -128 || hi > 127)
    LOOM_THROW(IsaError, "CLIP bounds [", lo, ", ", hi, "] do not fit signed bytes");
  return int32_t(int16_t(uint16_t((uint32_t(hi) & 0xff) << 8 | (uint32_t(lo) & 0xff))));
}
int32_t ShrSatImm::encode() const {
  if (shift < 0 || shift > 31) LOOM_THROW(IsaError, "SHRSAT shift ", shift, " is outside [0, 31]");
  if (width < 1 || width > 16) LOOM_THROW(IsaError, "SHRSAT width ", width, " is outside [1, 16]");
  const uint32_t bits = uint32_t(shift) | uint32_t(width - 1) << kShiftBits | uint32_t(non_negative) << 9;
  return int32_t(int16_t(uint16_t(bits)));
}
ShrSatImm ShrSatImm::decode(int32_t imm) {
  const uint32_t bits = uint32_t(imm);
  ShrSatImm f;
  f.shift = int(bits & 31);
  f.width = int((bits >> kShiftBits) & 15) + 1;
  f.non_negative = (bits >> 9) & 1;
  return f;
}
bool ShrSatImm::from_clamp(int shift, int32_t lo, int32_t hi, ShrSatImm* out) {
  if (shift < 0 || shift > 31) return false;
  for (int w = 1; w <= 16; ++w)
    for (bool non_negative : {false, true}) {
      ShrSatImm f{shift, w, non_negative};
      if (f.lo() == lo && f.hi() == hi) {
        *out = f;
        return true;
      }
    }
  return false;
}
const char* to_string(AluOp a) {
  switch (a) {
    case AluOp::Min:
      return "min";
    case AluOp::Max:
      return "max";
    case AluOp::Add:
      return "add";
    case AluOp::Shr:
      return "shr";
    case AluOp::Mul:
      return "mul";
    case AluOp::Mov:
      return "mov";
    case AluOp::Clip:
      return "clip";
    case AluOp::ShrSat:
      return "shrsat";
  }
  return "?";
}
const char* to_string(Module m) {
  switch (m) {
    case Module::Load:
      return "load";
    case Module::Compute:
      return "compute";
    case Module::Store:
      return "store";
  }
  return "?";
}

Module Instruction::module() const {
  if (opcode == Opcode::Store) return Module::Store;
  if (opcode == Opcode::Load && (mem == MemType::Inp || mem == MemType::Wgt)) return Module::Load;
  return Module::Compute;
}

bool Instruction::operator==(const Instruction& o) const {
  auto tie = [](const Instruction& i) {
    return std::make_tuple(i.opcode, i.dep.pop_prev, i.dep.pop_next, i.dep.push_prev, i.dep.push_next, i.mem,
                           i.sram_base, i.dram_base, i.y_size, i.x_size, i.x_stride, i.y_pad0, i.y_pad1, i.x_pad0,
                           i.x_pad1, i.reset, i.uop_begin, i.uop_end, i.iter_out, i.iter_in, i.dst_factor_out,
                           i.dst_factor_in, i.src_factor_out, i.src_factor_in, i.wgt_factor_out, i.wgt_factor_in,
                           i.alu_op, i.use_imm, i.imm);
  };
  return tie(*this) == tie(o);
}

IsaLayout::IsaLayout(const AccelConfig& c)
    : config(c),
      sram_bits(c.sram_index_bits()),
      uop_begin_bits(c.uop_index_bits()),
      uop_end_bits(c.uop_index_bits() + 1),
      dst_factor_bits(c.uop_dst_bits()),
      src_factor_bits(c.uop_src_bits()),
      wgt_factor_bits(c.uop_wgt_bits()) {}

namespace {

// Number of valid values of each enum field.
constexpr uint64_t valid_values(Opcode) { return 5; }
constexpr uint64_t valid_values(MemType) { return 5; }
constexpr uint64_t valid_values(AluOp) { return 8; }
const char* enum_noun(Opcode) { return "opcode"; }
const char* enum_noun(MemType) { return "memory type"; }
const char* enum_noun(AluOp) { return "ALU opcode"; }

// The one description of the instruction formats: calls f(name, width, member) for every field of
// `i`'s format in bit order (LSB first). The opcode comes first, so a decoder that assigns it
// while visiting picks the right format for the rest.
template <typename Insn, typename F>
void for_each_field(Insn& i, const IsaLayout& L, F&& f) {
  f("opcode", IsaLayout::kOpcodeBits, i.opcode);
  f("pop_prev", 1, i.dep.pop_prev);
  f("pop_next", 1, i.dep.pop_next);
  f("push_prev", 1, i.dep.push_prev);
  f("push_next", 1, i.dep.push_next);
  switch (i.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      f("memory_type", IsaLayout::kMemTypeBits, i.mem);
      f("sram_base", L.sram_bits, i.sram_base);
      f("dram_base", IsaLayout::kDramBits, i.dram_base);
      f("y_size", IsaLayout::kSizeBits, i.y_size);
      f("x_size", IsaLayout::kSizeBits, i.x_size);
      f("x_stride", IsaLayout::kStrideBits, i.x_stride);
      f("y_pad_0", IsaLayout::kPadBits, i.y_pad0);
      f("y_pad_1", IsaLayout::kPadBits, i.y_pad1);
      f("x_pad_0", IsaLayout::kPadBits, i.x_pad0);
      f("x_pad_1", IsaLayout::kPadBits, i.x_pad1);
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      f("reset", 1, i.reset);
      f("uop_begin", L.uop_begin_bits, i.uop_begin);
      f("uop_end", L.uop_end_bits, i.uop_end);
      f("iter_out", IsaLayout::kLoopBits, i.iter_out);
      f("iter_in", IsaLayout::kLoopBits, i.iter_in);
      f("dst_factor_out", L.dst_factor_bits, i.dst_factor_out);
      f("dst_factor_in", L.dst_factor_bits, i.dst_factor_in);
      f("src_factor_out", L.src_factor_bits, i.src_factor_out);
      f("src_factor_in", L.src_factor_bits, i.src_factor_in);
      if (i.opcode == Opcode::Gemm) {
        f("wgt_factor_out", L.wgt_factor_bits, i.wgt_factor_out);
        f("wgt_factor_in", L.wgt_factor_bits, i.wgt_factor_in);
      } else {
        f("alu_opcode", IsaLayout::kAluOpBits, i.alu_op);
        f("use_imm", 1, i.use_imm);
        f("imm", IsaLayout::kImmBits, i.imm);
      }
      break;
    case Opcode::Finish:
      break;
  }
}

class BitWriter {
 public:
  void put(uint64_t v, int width) {
    LOOM_CHECK(pos_ + width <= IsaLayout::kInsnBits, "instruction layout exceeds 128 bits");
    for (int k = 0; k < width; ++k, ++pos_)
      if ((v >> k) & 1) w_[pos_ / 64] |= uint64_t{1} << (pos_ % 64);
  }
  InsnWord word() const { return w_; }

 private:
  InsnWord w_{0, 0};
  int pos_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const InsnWord& w) : w_(w) {}
  uint64_t get(int width) {
    uint64_t v = 0;
    for (int k = 0; k < width; ++k, ++pos_) v |= ((w_[pos_ / 64] >> (pos_ % 64)) & 1) << k;
    return v;
  }
  bool rest_zero() const {
    for (int p = pos_; p < IsaLayout::kInsnBits; ++p)
      if ((w_[p / 64] >> (p % 64)) & 1) return false;
    return true;
  }

 private:
  InsnWord w_;
  int pos_ = 0;
};

uint64_t mask(int width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1; }

}  // namespace

std::vector<IsaLayout::Field> IsaLayout::fields(Opcode op) const {
  Instruction i;
  i.opcode = op;
  std::vector<Field> out;
  int offset = 0;
  for_each_field(i, *this, [&](const char* name, int width, auto&) {
    out.push_back({name, offset, width});
    offset += width;
  });
  return out;
}

int IsaLayout::insn_bits(Opcode op) const {
  auto f = fields(op);
  return f.back().offset + f.back().width;
}

InsnWord encode(const Instruction& insn, const IsaLayout& L) {
  BitWriter w;
  for_each_field(insn, L, [&](const char* name, int width, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    uint64_t raw;
    if constexpr (std::is_same_v<T, int32_t>) {  // the signed immediate: two's complement
      if (v < -(int64_t{1} << (width - 1)) || v >= (int64_t{1} << (width - 1)))
        LOOM_THROW(IsaError, "encode ", to_string(insn.opcode), ": field '", name, "' = ", v, " does not fit in ",
                   width, " signed bits");
      raw = uint64_t(int64_t(v)) & mask(width);
    } else {
      raw = uint64_t(v);
      if (raw > mask(width))
        LOOM_THROW(IsaError, "encode ", to_string(insn.opcode), ": field '", name, "' = ", raw, " does not fit in ",
                   width, " bits");
    }
    w.put(raw, width);
  });
  return w.word();
}

Instruction decode(const InsnWord& word, const IsaLayout& L, size_t index) {
  BitReader r(word);
  Instruction i;
  bool have_opcode = false;
  auto where = [&] {
    return "instruction " + std::to_string(index) + (have_opcode ? std::string(" (") + to_string(i.opcode) + ")" : "");
  };
  for_each_field(i, L, [&](const char* name, int width, auto& v) {
    using T = std::decay_t<decltype(v)>;
    uint64_t raw = r.get(width);
    if constexpr (std::is_enum_v<T>) {
      if (raw >= valid_values(T{}))
        LOOM_THROW(IsaError, where(), ": field '", name, "' = ", raw, " is not a valid ", enum_noun(T{}));
      v = T(raw);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      v = raw >> (width - 1) ? int32_t(int64_t(raw) - (int64_t{1} << width)) : int32_t(raw);  // sign-extend
    } else {
      v = T(raw);
    }
    have_opcode = true;
  });
  if (!r.rest_zero())
    LOOM_THROW(IsaError, where(), ": reserved bits above field '", L.fields(i.opcode).back().name, "' are set");
  return i;
}

uint32_t encode_uop(const MicroOp& u, const AccelConfig& c) {
  const int a = c.uop_dst_bits(), s = c.uop_src_bits(), w = c.uop_wgt_bits();
  if (u.dst >> a || u.src >> s || u.wgt >> w)
    LOOM_THROW(IsaError, "micro-op (dst=", u.dst, ", src=", u.src, ", wgt=", u.wgt,
               ") does not fit the config's index widths (", a, ", ", s, ", ", w, " bits)");
  return uint32_t(uint64_t(u.dst) | uint64_t(u.src) << a | uint64_t(u.wgt) << (a + s));
}

MicroOp decode_uop(uint32_t word, const AccelConfig& c) {
  const int a = c.uop_dst_bits(), s = c.uop_src_bits(), w = c.uop_wgt_bits();
  const uint64_t x = word;
  return {uint32_t(x & mask(a)), uint32_t((x >> a) & mask(s)), uint32_t((x >> (a + s)) & mask(w))};
}

int64_t buffer_depth(const AccelConfig& c, MemType m) {
  switch (m) {
    case MemType::Uop:
      return c.uop_depth();
    case MemType::Wgt:
      return c.wgt_depth();
    case MemType::Inp:
      return c.inp_depth();
    case MemType::Acc:
      return c.acc_depth();
    case MemType::Out:
      return c.out_depth();
  }
  return 0;
}

void check_instruction(const Instruction& i, const AccelConfig& c, size_t index) {
  auto fail = [&](const char* field, auto... what) {
    LOOM_THROW(IsaError, "instruction ", index, " (", to_string(i.opcode), "): field '", field, "': ", what...);
  };
  Module m = i.module();
  if (m == Module::Load && i.dep.pop_prev)
    fail("pop_prev", "the load module has no previous module to synchronize with");
  if (m == Module::Load && i.dep.push_prev)
    fail("push_prev", "the load module has no previous module to synchronize with");
  if (m == Module::Store && i.dep.pop_next) fail("pop_next", "the store module has no next module to synchronize with");
  if (m == Module::Store && i.dep.push_next)
    fail("push_next", "the store module has no next module to synchronize with");
  if (i.opcode == Opcode::Load || i.opcode == Opcode::Store) {
    const bool pads = i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1;
    const char* pad_field = i.y_pad0 ? "y_pad_0" : i.y_pad1 ? "y_pad_1" : i.x_pad0 ? "x_pad_0" : "x_pad_1";
    if (i.opcode == Opcode::Store && i.mem != MemType::Out)
      fail("memory_type", "STORE reads the out buffer, not ", to_string(i.mem));
    if (i.opcode == Opcode::Load && i.mem == MemType::Out) fail("memory_type", "LOAD cannot write the out buffer");
    if (i.opcode == Opcode::Store && pads) fail(pad_field, "STORE cannot pad");
    if (i.mem == MemType::Uop && pads) fail(pad_field, "micro-op loads cannot pad");
    if (i.x_size == 0 || i.y_size == 0) {  // a no-op that only carries dependency flags
      if (pads) fail(pad_field, "an empty transfer cannot pad");
      return;
    }
    if (i.y_size > 1 && i.x_stride < i.x_size) fail("x_stride", i.x_stride, " is smaller than x_size ", i.x_size);
    const int64_t depth = buffer_depth(c, i.mem);
    int64_t entries = int64_t(i.y_size + i.y_pad0 + i.y_pad1) * (i.x_size + i.x_pad0 + i.x_pad1);
    if (i.sram_base + entries > depth)
      fail("sram_base", to_string(i.mem), " buffer overflow: entries [", i.sram_base, ", ", i.sram_base + entries,
           ") exceed its depth ", depth);
  }
  if (i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu) {
    if (i.uop_end <= i.uop_begin) fail("uop_end", "empty micro-op range [", i.uop_begin, ", ", i.uop_end, ")");
    if (i.uop_end > c.uop_depth())
      fail("uop_end", "micro-op range end ", i.uop_end, " exceeds the uop buffer depth ", c.uop_depth());
    if (i.iter_out == 0) fail("iter_out", "zero loop extent");
    if (i.iter_in == 0) fail("iter_in", "zero loop extent");
    if (i.opcode == Opcode::Alu && i.alu_op == AluOp::Shr && i.use_imm && (i.imm > 31 || i.imm < -31))
      fail("imm", "shift amount ", i.imm, " is outside [-31, 31]");
    if (i.opcode == Opcode::Alu && i.alu_op == AluOp::Clip && !i.use_imm)
      fail("use_imm", "CLIP takes its bounds from the immediate only");
    if (i.opcode == Opcode::Alu && i.alu_op == AluOp::ShrSat && !i.use_imm)
      fail("use_imm", "SHRSAT takes its shift and range from the immediate only");
    if (i.opcode == Opcode::Alu && i.alu_op == AluOp::ShrSat && i.use_imm && ShrSatImm::reserved_set(i.imm))
      fail("imm", "SHRSAT immediate 0x", std::hex, uint32_t(i.imm) & 0xffff, std::dec, " sets reserved bits [15:10]");
  }
}

std::string disassemble(const Instruction& i) {
  std::ostringstream os;
  os << to_string(i.opcode);
  switch (i.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      os << " " << to_string(i.mem) << " sram=" << i.sram_base << " dram=0x" << std::hex << i.dram_base << std::dec
         << " y=" << i.y_size << " x=" << i.x_size << " stride=" << i.x_stride;
      if (i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1)
        os << " pad=(" << i.y_pad0 << "," << i.y_pad1 << "," << i.x_pad0 << "," << i.x_pad1 << ")";
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      if (i.opcode == Opcode::Alu) {
        os << "." << to_string(i.alu_op);
        if (i.alu_op == AluOp::Clip && i.use_imm)
          os << " imm=[" << clip_lo(i.imm) << "," << clip_hi(i.imm) << "]";
        else if (i.alu_op == AluOp::ShrSat && i.use_imm && !ShrSatImm::reserved_set(i.imm))
          os << " imm=" << ShrSatImm::decode(i.imm).shift << ",[" << ShrSatImm::decode(i.imm).lo() << ","
             << ShrSatImm::decode(i.imm).hi() << "]";
        else if (i.use_imm)
          os << " imm=" << i.imm;
      }
      if (i.reset) os << " reset";
      os << " uop=[" << i.uop_begin << "," << i.uop_end << ") loop=" << i.iter_out << "x" << i.iter_in << " dst=("
         << i.dst_factor_out << "," << i.dst_factor_in << ") src=(" << i.src_factor_out << "," << i.src_factor_in
         << ")";
      if (i.opcode == Opcode::Gemm) os << " wgt=(" << i.wgt_factor_out << "," << i.wgt_factor_in << ")";
      break;
    case Opcode::Finish:
      break;
  }
  std::string deps;
  for (auto [on, n] : {std::pair{i.dep.pop_prev, "pop_prev"}, std::pair{i.dep.pop_next, "pop_next"},
                       std::pair{i.dep.push_prev, "push_prev"}, std::pair{i.dep.push_next, "push_next"}})
    if (on) {
      if (!deps.empty()) deps += ",";
      deps += n;
    }
  if (!deps.empty()) os << " deps=[" << deps << "]";
  return os.str();
}

std::string disassemble(const std::vector<Instruction>& stream) {
  std::ostringstream os;
  for (size_t k = 0; k < stream.size(); ++k) os << k << ": " << disassemble(stream[k]) << "\n";
  return os.str();
}

}  // namespace loom::accel
