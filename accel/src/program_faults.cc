// Faults planted in a program (program_faults.h).
#include "loom/accel/program_faults.h"

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "loom/runtime/error.h"
#include "loom/runtime/hex.h"

namespace loom::accel {

namespace {

constexpr size_t kWordBytes = 16;

bool is_transfer(const Instruction& i) { return i.opcode == Opcode::Load || i.opcode == Opcode::Store; }

}  // namespace

std::optional<PlantedFault> plant_fault(Program& p, uint64_t seed) {
  Program::Segment* seg = nullptr;
  for (Program::Segment& s : p.segments)
    if (p.insn_addr >= s.addr && p.insn_addr + uint64_t(p.insn_count) * kWordBytes <= s.addr + s.data.size()) seg = &s;
  if (!seg) LOOM_THROW(RuntimeError, "plant_fault: the program's stream lies in none of its segments");
  uint8_t* words = seg->data.data() + (p.insn_addr - seg->addr);
  const IsaLayout L(p.config);
  std::vector<Instruction> insns;
  for (uint32_t k = 0; k < p.insn_count; ++k) {
    InsnWord w;
    std::memcpy(w.data(), words + k * kWordBytes, kWordBytes);
    insns.push_back(decode(w, L, k));
  }
  std::mt19937_64 g(seed);
  auto write = [&](uint32_t k, const InsnWord& w) { std::memcpy(words + k * kWordBytes, w.data(), kWordBytes); };
  // Each kind: whether it applies to an instruction, and the change (returns what it did).
  // A stream kind changes what the host writes to INSN_ADDR/INSN_COUNT rather than a word: its
  // text names the stream, not an instruction.
  struct Kind {
    std::function<bool(uint32_t, const Instruction&)> applies;
    std::function<std::string(uint32_t, Instruction)> plant;
    bool stream = false;
  };
  auto only_finish_is_last = [&](uint32_t k, const Instruction& i) {
    if (i.opcode != Opcode::Finish || k + 1 != insns.size()) return false;
    for (uint32_t j = 0; j < k; ++j)
      if (insns[j].opcode == Opcode::Finish) return false;
    return true;
  };
  const std::vector<Kind> kinds = {
      {[](uint32_t, const Instruction& i) { return i.opcode != Opcode::Finish; },
       [&](uint32_t k, Instruction) {
         // Half the time the rest of the word is random: the decoder must stop at the opcode
         // whatever else the word holds.
         const bool junk = g() % 2;
         InsnWord w = junk ? InsnWord{g(), g()} : encode(insns[k], L);
         const uint64_t op = 5 + g() % 3;  // Load..Alu are 0..4
         w[0] = (w[0] & ~uint64_t(7)) | op;
         write(k, w);
         return "illegal opcode " + std::to_string(op) + (junk ? " (the rest of the word random)" : "");
       }},
      {[&](uint32_t, const Instruction& i) { return L.insn_bits(i.opcode) < IsaLayout::kInsnBits; },
       [&](uint32_t k, Instruction) {
         // Bit 127 and a random share of the other bits the format leaves unused.
         InsnWord w = encode(insns[k], L);
         int set = 0;
         for (int b = L.insn_bits(insns[k].opcode); b < IsaLayout::kInsnBits; ++b)
           if (b == IsaLayout::kInsnBits - 1 || g() % 2) {
             w[b / 64] |= uint64_t{1} << (b % 64);
             ++set;
           }
         write(k, w);
         return "reserved bits set (" + std::to_string(set) + ", bit 127 among them)";
       }},
      {[](uint32_t, const Instruction& i) { return i.opcode == Opcode::Alu; },
       [&](uint32_t k, Instruction i) {
         if (g() % 2) {  // SHRSAT's reserved immediate bits
           i.alu_op = AluOp::ShrSat;
           i.use_imm = true;
           i.imm =
               int32_t(int16_t(uint16_t(ShrSatImm{}.encode() | int32_t(1 + g() % 63) << ShrSatImm::kReservedShift)));
           write(k, encode(i, L));
           return std::string("illegal ALU operation: SHRSAT with reserved immediate bits");
         }
         i.alu_op = AluOp::Clip;  // CLIP's bounds come from the immediate only
         i.use_imm = false;
         write(k, encode(i, L));
         return std::string("illegal ALU operation: CLIP with a register operand");
       }},
      {[&](uint32_t, const Instruction& i) {
         return is_transfer(i) && int64_t(i.y_size + i.y_pad0 + i.y_pad1) * (i.x_size + i.x_pad0 + i.x_pad1) > 1 &&
                buffer_depth(p.config, i.mem) - 1 < (int64_t{1} << L.sram_bits);
       },
       [&](uint32_t k, Instruction i) {
         i.sram_base = uint32_t(buffer_depth(p.config, i.mem) - 1);
         write(k, encode(i, L));
         return "scratchpad base " + std::to_string(i.sram_base) + " (its last entry)";
       }},
      {[](uint32_t, const Instruction& i) { return i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu; },
       [&](uint32_t k, Instruction i) {
         i.uop_end = uint32_t(p.config.uop_depth() + 1);
         write(k, encode(i, L));
         return "micro-op range end " + std::to_string(i.uop_end) + " (past the buffer)";
       }},
      {[](uint32_t, const Instruction& i) { return is_transfer(i) && i.mem != MemType::Uop && i.x_size && i.y_size; },
       [&](uint32_t k, Instruction i) {
         // The field's top bit set, the rest drawn: past any device memory, and the DMA's upper
         // address bits see ones that legal programs never give them.
         i.dram_base = uint32_t(g()) | uint32_t{1} << 31;
         write(k, encode(i, L));
         return "DRAM address " + hex(uint64_t(i.dram_base) * uint64_t(entry_bytes(p.config, i.mem))) +
                " (outside device memory)";
       }},
      {[](uint32_t, const Instruction& i) { return is_transfer(i); },
       [&](uint32_t k, Instruction i) {
         i.mem = MemType(5 + g() % 3);  // Uop..Out are 0..4
         write(k, encode(i, L));
         return "illegal memory type " + std::to_string(int(i.mem));
       }},
      {[](uint32_t, const Instruction& i) { return is_transfer(i) && i.mem != MemType::Uop && i.mem != MemType::Acc; },
       [&](uint32_t k, Instruction i) {
         i.mem = i.opcode == Opcode::Store ? MemType::Inp : MemType::Out;
         write(k, encode(i, L));
         return std::string("memory type ") + to_string(i.mem) + " for a " + to_string(i.opcode);
       }},
      {[](uint32_t, const Instruction& i) { return i.module() != Module::Compute; },
       [&](uint32_t k, Instruction i) {
         if (i.module() == Module::Load)
           i.dep.pop_prev = true;  // the load module has no previous module
         else
           i.dep.pop_next = true;  // nor the store module a next one
         write(k, encode(i, L));
         return std::string("dependency flag toward no module");
       }},
      {[](uint32_t, const Instruction& i) { return is_transfer(i) && i.mem != MemType::Uop; },
       [&](uint32_t k, Instruction i) {
         if (g() % 2) {
           i.x_size = 0;
           i.x_pad0 = 1;  // padding around nothing
         } else {
           i.y_size = std::max<uint32_t>(i.y_size, 2);
           i.x_size = std::max<uint32_t>(i.x_size, 2);
           i.x_stride = i.x_size - 1;  // rows overlap
         }
         write(k, encode(i, L));
         return std::string("malformed transfer shape");
       }},
      {[](uint32_t, const Instruction& i) { return i.opcode == Opcode::Alu; },
       [&](uint32_t k, Instruction i) {
         i.alu_op = AluOp::Shr;
         i.use_imm = true;
         i.imm = g() % 2 ? 40 : -40;
         write(k, encode(i, L));
         return "shift by " + std::to_string(i.imm);
       }},
      {[](uint32_t, const Instruction& i) {
         return (i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu) && i.uop_end > i.uop_begin;
       },
       [&](uint32_t k, Instruction i) {
         // The third outer iteration's accumulator index is at least twice the field's largest
         // value, past the buffer (as deep as the field can index): a fault only the run finds.
         i.iter_out = std::max<uint32_t>(i.iter_out, 3);
         i.iter_in = std::max<uint32_t>(i.iter_in, 1);
         i.dst_factor_out = (uint32_t{1} << L.dst_factor_bits) - 1;
         write(k, encode(i, L));
         return std::string("index past the accumulators at run time");
       }},
      {[](uint32_t, const Instruction& i) { return i.dep.push_prev || i.dep.push_next; },
       [&](uint32_t k, Instruction i) {
         i.dep.push_prev = i.dep.push_next = false;
         write(k, encode(i, L));
         return std::string("its dependency tokens never pushed");
       }},
      {[](uint32_t k, const Instruction&) { return k == 0; },
       [&](uint32_t, Instruction) {
         p.insn_addr += 1 + g() % (kWordBytes - 1);
         return "unaligned stream address " + hex(p.insn_addr);
       },
       true},
      {[](uint32_t k, const Instruction&) { return k == 0; },
       [&](uint32_t, Instruction) {
         // Far above any allocation and 64 KiB short of the end of the address space, so that
         // the stream's bursts do not wrap; its high bits are the ones real streams never set.
         p.insn_addr = (g() | uint64_t{1} << 63) & ~uint64_t{0xffff};
         return "stream outside device memory at " + hex(p.insn_addr);
       },
       true},
      {only_finish_is_last,
       [&](uint32_t k, Instruction) {
         p.insn_count = k;
         return "stream without FINISH (the host's count " + std::to_string(k) + " leaves it out)";
       },
       true},
  };
  const size_t first = g() % kinds.size();
  for (size_t t = 0; t < kinds.size(); ++t) {
    const Kind& kind = kinds[(first + t) % kinds.size()];
    std::vector<uint32_t> candidates;
    for (uint32_t k = 0; k < insns.size(); ++k)
      if (kind.applies(k, insns[k])) candidates.push_back(k);
    if (candidates.empty()) continue;
    const uint32_t k = candidates[g() % candidates.size()];
    const std::string what = kind.plant(k, insns[k]);
    if (kind.stream) return PlantedFault{k, what};
    return PlantedFault{k, what + " in instruction " + std::to_string(k) + " (" + disassemble(insns[k]) + ")"};
  }
  return std::nullopt;
}

RunStop run_stop(AccelDevice& device) {
  RunStop s;
  const uint32_t status = device.read_reg(reg::kStatus);
  s.error = (status & reg::kError) != 0;
  if (s.error) {
    s.fault = AccelFault((status >> reg::kFaultShift) & reg::kFaultMask);
    s.index = device.read_reg(reg::kErrorIndex);
  }
  return s;
}

std::string RunStop::describe() const {
  if (!error) return "no fault";
  return (fault == AccelFault::None ? std::string("a fault") : std::string(to_string(fault))) + " at instruction " +
         std::to_string(index);
}

bool RunStop::agrees(const RunStop& o) const {
  return error == o.error && (!error || (index == o.index && (fault == AccelFault::None ||
                                                              o.fault == AccelFault::None || fault == o.fault)));
}

}  // namespace loom::accel
