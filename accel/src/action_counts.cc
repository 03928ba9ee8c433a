#include "loom/accel/action_counts.h"

namespace loom::accel {

AccelCounter load_insn_counter(MemType m) {
  return m == MemType::Uop   ? AccelCounter::UopLoadInsns
         : m == MemType::Acc ? AccelCounter::AccLoadInsns
                             : AccelCounter::LoadInsns;
}

AccelCounter dma_counter(MemType m) {
  switch (m) {
    case MemType::Inp:
      return AccelCounter::DmaLoadBytesInp;
    case MemType::Wgt:
      return AccelCounter::DmaLoadBytesWgt;
    case MemType::Acc:
      return AccelCounter::DmaLoadBytesAcc;
    case MemType::Uop:
      return AccelCounter::DmaLoadBytesUop;
    case MemType::Out:
      break;
  }
  return AccelCounter::DmaStoreBytes;
}

AccelCounter pad_counter(MemType m) {
  return m == MemType::Wgt   ? AccelCounter::PadEntriesWgt
         : m == MemType::Acc ? AccelCounter::PadEntriesAcc
                             : AccelCounter::PadEntriesInp;
}

ActionCounts count_actions(const std::vector<Instruction>& stream, const AccelConfig& c) {
  ActionCounts n(size_t(AccelCounter::Count), 0);
  auto add = [&](AccelCounter k, uint64_t v) { n[size_t(k)] += v; };
  const uint64_t lanes = uint64_t(c.batch) * c.block_out;
  for (const Instruction& i : stream) {
    const uint64_t moved = uint64_t(i.y_size) * i.x_size;
    const uint64_t written = uint64_t(i.y_pad0 + i.y_size + i.y_pad1) * (i.x_pad0 + i.x_size + i.x_pad1);
    const uint64_t steps = uint64_t(i.iter_out) * i.iter_in * (i.uop_end - i.uop_begin);
    switch (i.opcode) {
      case Opcode::Load:
        add(load_insn_counter(i.mem), 1);
        add(dma_counter(i.mem), moved * uint64_t(entry_bytes(c, i.mem)));
        if (i.mem != MemType::Uop) add(pad_counter(i.mem), written - moved);
        break;
      case Opcode::Store:
        add(AccelCounter::StoreInsns, 1);
        add(dma_counter(MemType::Out), moved * uint64_t(entry_bytes(c, MemType::Out)));
        break;
      case Opcode::Gemm:
        add(AccelCounter::GemmInsns, 1);
        if (i.reset)
          add(AccelCounter::GemmResetSteps, steps);
        else
          add(AccelCounter::GemmMacs, steps * lanes * uint64_t(c.block_in));
        break;
      case Opcode::Alu:
        add(AccelCounter::AluInsns, 1);
        add(AccelCounter::AluOps, steps * lanes);
        if (reads_two_entries(i)) add(AccelCounter::AluVectorOps, steps * lanes);
        break;
      case Opcode::Finish:
        break;
    }
  }
  return n;
}

}  // namespace loom::accel
