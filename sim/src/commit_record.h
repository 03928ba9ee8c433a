// Internal to loom_sim: the commit record of one instruction, built the same way by every backend
// from its own state (fsim's scratchpad vectors, the RTL's SRAM arrays; DRAM), so that records are
// comparable byte for byte. Only the entries the instruction writes are digested: scratchpads
// outlive runs on the RTL and start empty on fsim, so their other entries may differ legitimately.
#pragma once
#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>
#include <vector>

#include "loom/accel/config.h"
#include "loom/sim/commit_log.h"

namespace loom::sim {

struct ScratchpadView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Bytes per entry of a scratchpad.
inline uint64_t scratchpad_entry_bytes(const accel::AccelConfig& c, accel::MemType m) {
  switch (m) {
    case accel::MemType::Inp:
      return c.inp_block_bytes();
    case accel::MemType::Wgt:
      return c.wgt_block_bytes();
    case accel::MemType::Acc:
      return c.acc_block_bytes();
    case accel::MemType::Out:
      return c.out_block_bytes();
    case accel::MemType::Uop:
      break;
  }
  return accel::AccelConfig::kUopBytes;
}

// The records since the last take, moved out in (run, index) order (CommitLogSource::take_commits).
inline std::vector<CommitRecord> take_sorted(std::vector<CommitRecord>& records) {
  std::vector<CommitRecord> r = std::move(records);
  records.clear();
  std::sort(r.begin(), r.end(), [](const CommitRecord& a, const CommitRecord& b) {
    return std::pair(a.run, a.index) < std::pair(b.run, b.index);
  });
  return r;
}

// scratchpad(MemType) -> ScratchpadView (its whole contents, entries in order, little-endian
// elements; valid until the next call); dram(addr, bytes) -> const uint8_t* (the bytes at a device address, null
// outside allocated memory).
template <typename Scratchpad, typename Dram>
std::optional<CommitRecord> make_commit_record(const accel::Instruction& i, uint32_t index, const accel::AccelConfig& c,
                                               Scratchpad scratchpad, Dram dram) {
  using accel::MemType;
  using accel::Opcode;
  CommitRecord r;
  r.index = index;
  r.module = i.module();
  r.opcode = i.opcode;
  r.digest = digest_bytes(nullptr, 0);
  auto entry_bytes = [&](MemType m) { return scratchpad_entry_bytes(c, m); };
  std::ostringstream t;
  switch (i.opcode) {
    case Opcode::Load: {
      const uint64_t first = i.sram_base,
                     count = uint64_t(i.y_pad0 + i.y_size + i.y_pad1) * (i.x_pad0 + i.x_size + i.x_pad1);
      const ScratchpadView s = scratchpad(i.mem);
      const uint64_t eb = entry_bytes(i.mem), end = std::min<uint64_t>((first + count) * eb, s.size);
      t << accel::to_string(i.mem) << " entries [" << first << ", " << first + count << ")";
      if (first * eb < end) r.digest = digest_bytes(s.data + first * eb, end - first * eb);
      break;
    }
    case Opcode::Gemm:
    case Opcode::Alu: {
      // The accumulator entries the micro-op loop writes (and their low bits in the out scratchpad).
      const ScratchpadView uops = scratchpad(MemType::Uop), acc = scratchpad(MemType::Acc),
                           out = scratchpad(MemType::Out);
      std::vector<uint64_t> dst;
      for (uint32_t o = 0; o < i.iter_out; ++o)
        for (uint32_t n = 0; n < i.iter_in; ++n)
          for (uint32_t u = i.uop_begin; u < i.uop_end && uint64_t(u) * 4 + 4 <= uops.size; ++u) {
            uint32_t word;
            std::memcpy(&word, uops.data + uint64_t(u) * 4, 4);
            dst.push_back(accel::decode_uop(word, c).dst + uint64_t(o) * i.dst_factor_out +
                          uint64_t(n) * i.dst_factor_in);
          }
      std::sort(dst.begin(), dst.end());
      dst.erase(std::unique(dst.begin(), dst.end()), dst.end());
      const uint64_t ab = entry_bytes(MemType::Acc), ob = entry_bytes(MemType::Out);
      for (uint64_t d : dst) {
        if ((d + 1) * ab > acc.size || (d + 1) * ob > out.size) break;  // out of range: the run faults
        r.digest = digest_bytes(acc.data + d * ab, ab, r.digest);
        r.digest = digest_bytes(out.data + d * ob, ob, r.digest);
      }
      t << "acc and out entries (" << dst.size() << " written)";
      break;
    }
    case Opcode::Store: {
      const uint64_t row_bytes = uint64_t(i.x_size) * c.out_block_bytes();
      t << "DRAM rows from 0x" << std::hex << uint64_t(i.dram_base) * c.out_block_bytes() << std::dec << " ("
        << i.y_size << " x " << row_bytes << " bytes)";
      for (uint32_t y = 0; y < i.y_size; ++y) {
        const uint64_t addr = (uint64_t(i.dram_base) + uint64_t(y) * i.x_stride) * c.out_block_bytes();
        const uint8_t* row = dram(addr, row_bytes);
        if (!row) {  // the run failed on this store; its record says so
          t << ", outside allocated device memory";
          break;
        }
        r.digest = digest_bytes(row, row_bytes, r.digest);
      }
      break;
    }
    case Opcode::Finish:
      return std::nullopt;
  }
  r.target = t.str();
  return r;
}

}  // namespace loom::sim
