#include "loom/accel/isa.h"

#include <sstream>
#include <tuple>

#include "loom/runtime/error.h"

namespace loom::accel {

const char* to_string(Opcode o) {
  switch (o) {
    case Opcode::Load: return "LOAD";
    case Opcode::Store: return "STORE";
    case Opcode::Gemm: return "GEMM";
    case Opcode::Finish: return "FINISH";
    case Opcode::Alu: return "ALU";
  }
  return "?";
}
const char* to_string(MemType m) {
  switch (m) {
    case MemType::Uop: return "uop";
    case MemType::Wgt: return "wgt";
    case MemType::Inp: return "inp";
    case MemType::Acc: return "acc";
    case MemType::Out: return "out";
  }
  return "?";
}
const char* to_string(AluOp a) {
  switch (a) {
    case AluOp::Min: return "min";
    case AluOp::Max: return "max";
    case AluOp::Add: return "add";
    case AluOp::Shr: return "shr";
    case AluOp::Mul: return "mul";
  }
  return "?";
}
const char* to_string(Module m) {
  switch (m) {
    case Module::Load: return "load";
    case Module::Compute: return "compute";
    case Module::Store: return "store";
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
    return std::make_tuple(i.opcode, i.dep.pop_prev, i.dep.pop_next, i.dep.push_prev, i.dep.push_next, i.mem, i.sram_base, i.dram_base,
                      i.y_size, i.x_size, i.x_stride, i.y_pad0, i.y_pad1, i.x_pad0, i.x_pad1, i.reset, i.uop_begin, i.uop_end,
                      i.iter_out, i.iter_in, i.dst_factor_out, i.dst_factor_in, i.src_factor_out, i.src_factor_in,
                      i.wgt_factor_out, i.wgt_factor_in, i.alu_op, i.use_imm, i.imm);
  };
  return tie(*this) == tie(o);
}

IsaLayout::IsaLayout(const AccelConfig& c)
    : config(c),
      sram_bits(c.sram_index_bits()),
      uop_index_bits(c.uop_index_bits()),
      acc_bits(c.acc_index_bits()),
      inp_bits(std::max(c.inp_index_bits(), c.acc_index_bits())),  // ALU sources index the accumulator
      wgt_bits(c.wgt_index_bits()) {}

int IsaLayout::memory_insn_bits() const { return 3 + 4 + 3 + sram_bits + dram_bits + 2 * size_bits + stride_bits + 4 * pad_bits; }
int IsaLayout::compute_insn_bits() const {
  int common = 3 + 4 + 1 + uop_index_bits + (uop_index_bits + 1) + 2 * loop_bits + 2 * acc_bits + 2 * inp_bits;
  return common + std::max(2 * wgt_bits, 3 + 1 + imm_bits);
}

namespace {

class BitWriter {
 public:
  void put(uint64_t v, int width, const char* field) {
    if (width < 64 && v >> width)
      LOOM_THROW(IsaError, "encode: field '", field, "' value ", v, " does not fit in ", width, " bits");
    for (int i = 0; i < width; ++i, ++pos_)
      if ((v >> i) & 1) w_[pos_ / 64] |= uint64_t{1} << (pos_ % 64);
    LOOM_CHECK(pos_ <= 128, "instruction layout exceeds 128 bits");
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
    for (int i = 0; i < width; ++i, ++pos_) v |= ((w_[pos_ / 64] >> (pos_ % 64)) & 1) << i;
    return v;
  }
  bool rest_zero() const {
    for (int p = pos_; p < 128; ++p)
      if ((w_[p / 64] >> (p % 64)) & 1) return false;
    return true;
  }

 private:
  InsnWord w_;
  int pos_ = 0;
};

uint64_t dep_bits(const DepFlags& d) { return d.pop_prev | d.pop_next << 1 | d.push_prev << 2 | d.push_next << 3; }
DepFlags dep_from(uint64_t b) { return {bool(b & 1), bool(b & 2), bool(b & 4), bool(b & 8)}; }

}  // namespace

InsnWord encode(const Instruction& i, const IsaLayout& L) {
  BitWriter w;
  w.put(static_cast<uint64_t>(i.opcode), 3, "opcode");
  w.put(dep_bits(i.dep), 4, "dep");
  switch (i.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      w.put(static_cast<uint64_t>(i.mem), 3, "memory_type");
      w.put(i.sram_base, L.sram_bits, "sram_base");
      w.put(i.dram_base, L.dram_bits, "dram_base");
      w.put(i.y_size, L.size_bits, "y_size");
      w.put(i.x_size, L.size_bits, "x_size");
      w.put(i.x_stride, L.stride_bits, "x_stride");
      w.put(i.y_pad0, L.pad_bits, "y_pad_0");
      w.put(i.y_pad1, L.pad_bits, "y_pad_1");
      w.put(i.x_pad0, L.pad_bits, "x_pad_0");
      w.put(i.x_pad1, L.pad_bits, "x_pad_1");
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      w.put(i.reset, 1, "reset");
      w.put(i.uop_begin, L.uop_index_bits, "uop_begin");
      w.put(i.uop_end, L.uop_index_bits + 1, "uop_end");
      w.put(i.iter_out, L.loop_bits, "iter_out");
      w.put(i.iter_in, L.loop_bits, "iter_in");
      w.put(i.dst_factor_out, L.acc_bits, "dst_factor_out");
      w.put(i.dst_factor_in, L.acc_bits, "dst_factor_in");
      w.put(i.src_factor_out, L.inp_bits, "src_factor_out");
      w.put(i.src_factor_in, L.inp_bits, "src_factor_in");
      if (i.opcode == Opcode::Gemm) {
        w.put(i.wgt_factor_out, L.wgt_bits, "wgt_factor_out");
        w.put(i.wgt_factor_in, L.wgt_bits, "wgt_factor_in");
      } else {
        w.put(static_cast<uint64_t>(i.alu_op), 3, "alu_opcode");
        w.put(i.use_imm, 1, "use_imm");
        if (i.imm < -(1 << (L.imm_bits - 1)) || i.imm >= (1 << (L.imm_bits - 1)))
          LOOM_THROW(IsaError, "encode: ALU immediate ", i.imm, " does not fit in ", L.imm_bits, " signed bits");
        w.put(static_cast<uint64_t>(i.imm) & ((uint64_t{1} << L.imm_bits) - 1), L.imm_bits, "imm");
      }
      break;
    case Opcode::Finish: break;
  }
  return w.word();
}

Instruction decode(const InsnWord& word, const IsaLayout& L, size_t index) {
  BitReader r(word);
  Instruction i;
  uint64_t op = r.get(3);
  if (op > 4) LOOM_THROW(IsaError, "instruction ", index, ": invalid opcode ", op);
  i.opcode = static_cast<Opcode>(op);
  i.dep = dep_from(r.get(4));
  switch (i.opcode) {
    case Opcode::Load:
    case Opcode::Store: {
      uint64_t m = r.get(3);
      if (m > 4) LOOM_THROW(IsaError, "instruction ", index, " (", to_string(i.opcode), "): invalid memory type ", m);
      i.mem = static_cast<MemType>(m);
      i.sram_base = uint32_t(r.get(L.sram_bits));
      i.dram_base = uint32_t(r.get(L.dram_bits));
      i.y_size = uint32_t(r.get(L.size_bits));
      i.x_size = uint32_t(r.get(L.size_bits));
      i.x_stride = uint32_t(r.get(L.stride_bits));
      i.y_pad0 = uint32_t(r.get(L.pad_bits));
      i.y_pad1 = uint32_t(r.get(L.pad_bits));
      i.x_pad0 = uint32_t(r.get(L.pad_bits));
      i.x_pad1 = uint32_t(r.get(L.pad_bits));
      break;
    }
    case Opcode::Gemm:
    case Opcode::Alu:
      i.reset = r.get(1);
      i.uop_begin = uint32_t(r.get(L.uop_index_bits));
      i.uop_end = uint32_t(r.get(L.uop_index_bits + 1));
      i.iter_out = uint32_t(r.get(L.loop_bits));
      i.iter_in = uint32_t(r.get(L.loop_bits));
      i.dst_factor_out = uint32_t(r.get(L.acc_bits));
      i.dst_factor_in = uint32_t(r.get(L.acc_bits));
      i.src_factor_out = uint32_t(r.get(L.inp_bits));
      i.src_factor_in = uint32_t(r.get(L.inp_bits));
      if (i.opcode == Opcode::Gemm) {
        i.wgt_factor_out = uint32_t(r.get(L.wgt_bits));
        i.wgt_factor_in = uint32_t(r.get(L.wgt_bits));
      } else {
        uint64_t a = r.get(3);
        if (a > 4) LOOM_THROW(IsaError, "instruction ", index, " (ALU): invalid ALU opcode ", a);
        i.alu_op = static_cast<AluOp>(a);
        i.use_imm = r.get(1);
        uint64_t raw = r.get(L.imm_bits);
        // Two's complement, sign-extended.
        i.imm = raw >> (L.imm_bits - 1) ? int32_t(int64_t(raw) - (int64_t{1} << L.imm_bits)) : int32_t(raw);
      }
      break;
    case Opcode::Finish: break;
  }
  if (!r.rest_zero()) LOOM_THROW(IsaError, "instruction ", index, " (", to_string(i.opcode), "): reserved bits are set");
  return i;
}

uint32_t encode_uop(const MicroOp& u, const AccelConfig& c) {
  int a = c.acc_index_bits(), s = std::max(c.inp_index_bits(), c.acc_index_bits()), w = c.wgt_index_bits();
  if (u.dst >> a || u.src >> s || u.wgt >> w)
    LOOM_THROW(IsaError, "micro-op (dst=", u.dst, ", src=", u.src, ", wgt=", u.wgt, ") does not fit the config's index widths");
  return u.dst | u.src << a | u.wgt << (a + s);
}

MicroOp decode_uop(uint32_t word, const AccelConfig& c) {
  int a = c.acc_index_bits(), s = std::max(c.inp_index_bits(), c.acc_index_bits()), w = c.wgt_index_bits();
  auto mask = [](int bits) { return bits >= 32 ? 0xffffffffu : (1u << bits) - 1; };
  return {word & mask(a), (word >> a) & mask(s), (word >> (a + s)) & mask(w)};
}

void check_instruction(const Instruction& i, const AccelConfig& c, size_t index) {
  auto fail = [&](auto... what) { LOOM_THROW(IsaError, "instruction ", index, " (", to_string(i.opcode), "): ", what...); };
  Module m = i.module();
  if (m == Module::Load && (i.dep.pop_prev || i.dep.push_prev)) fail("the load module has no previous module to synchronize with");
  if (m == Module::Store && (i.dep.pop_next || i.dep.push_next)) fail("the store module has no next module to synchronize with");
  if (i.opcode == Opcode::Load || i.opcode == Opcode::Store) {
    if (i.opcode == Opcode::Store && i.mem != MemType::Out) fail("STORE must read the out buffer, not ", to_string(i.mem));
    if (i.opcode == Opcode::Load && i.mem == MemType::Out) fail("LOAD cannot write the out buffer");
    if (i.opcode == Opcode::Store && (i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1)) fail("STORE cannot pad");
    if (i.mem == MemType::Uop && (i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1)) fail("micro-op loads cannot pad");
    if (i.x_size == 0 || i.y_size == 0) {  // a no-op that only carries dependency flags
      if (i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1) fail("an empty transfer cannot pad");
      return;
    }
    if (i.y_size > 1 && i.x_stride < i.x_size) fail("x_stride ", i.x_stride, " is smaller than x_size ", i.x_size);
    int64_t depth = i.mem == MemType::Inp ? c.inp_depth() : i.mem == MemType::Wgt ? c.wgt_depth()
                    : i.mem == MemType::Acc ? c.acc_depth() : i.mem == MemType::Out ? c.out_depth() : c.uop_depth();
    int64_t entries = int64_t(i.y_size + i.y_pad0 + i.y_pad1) * (i.x_size + i.x_pad0 + i.x_pad1);
    if (i.sram_base + entries > depth)
      fail(to_string(i.mem), " buffer overflow: entries [", i.sram_base, ", ", i.sram_base + entries, ") exceed its depth ", depth);
  }
  if (i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu) {
    if (i.uop_end <= i.uop_begin) fail("empty micro-op range [", i.uop_begin, ", ", i.uop_end, ")");
    if (i.uop_end > c.uop_depth()) fail("micro-op range end ", i.uop_end, " exceeds the uop buffer depth ", c.uop_depth());
    if (i.iter_out == 0 || i.iter_in == 0) fail("zero loop extent (iter_out=", i.iter_out, ", iter_in=", i.iter_in, ")");
    if (i.opcode == Opcode::Alu && i.alu_op == AluOp::Shr && i.use_imm && (i.imm > 31 || i.imm < -31))
      fail("shift amount ", i.imm, " is outside [-31, 31]");
  }
}

std::string disassemble(const Instruction& i) {
  std::ostringstream os;
  os << to_string(i.opcode);
  switch (i.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      os << " " << to_string(i.mem) << " sram=" << i.sram_base << " dram=0x" << std::hex << i.dram_base << std::dec << " y=" << i.y_size
         << " x=" << i.x_size << " stride=" << i.x_stride;
      if (i.y_pad0 | i.y_pad1 | i.x_pad0 | i.x_pad1)
        os << " pad=(" << i.y_pad0 << "," << i.y_pad1 << "," << i.x_pad0 << "," << i.x_pad1 << ")";
      break;
    case Opcode::Gemm:
    case Opcode::Alu:
      if (i.opcode == Opcode::Alu) os << "." << to_string(i.alu_op) << (i.use_imm ? " imm=" + std::to_string(i.imm) : "");
      if (i.reset) os << " reset";
      os << " uop=[" << i.uop_begin << "," << i.uop_end << ") loop=" << i.iter_out << "x" << i.iter_in << " dst=(" << i.dst_factor_out
         << "," << i.dst_factor_in << ") src=(" << i.src_factor_out << "," << i.src_factor_in << ")";
      if (i.opcode == Opcode::Gemm) os << " wgt=(" << i.wgt_factor_out << "," << i.wgt_factor_in << ")";
      break;
    case Opcode::Finish: break;
  }
  std::string deps;
  for (auto [on, n] : {std::pair{i.dep.pop_prev, "pop_prev"}, std::pair{i.dep.pop_next, "pop_next"}, std::pair{i.dep.push_prev, "push_prev"},
                       std::pair{i.dep.push_next, "push_next"}})
    if (on) deps += (deps.empty() ? "" : ",") + std::string(n);
  if (!deps.empty()) os << " deps=[" << deps << "]";
  return os.str();
}

std::string disassemble(const std::vector<Instruction>& stream) {
  std::ostringstream os;
  for (size_t k = 0; k < stream.size(); ++k) os << k << ": " << disassemble(stream[k]) << "\n";
  return os.str();
}

}  // namespace loom::accel
