// DMA lowering: a dma_copy between device memory and a scratchpad becomes LOAD/STORE
// instructions (entries, at most two strided dimensions per instruction, zero padding).
#include "accel_emitter.h"

#include <sstream>

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::MemType;
using accel::Module;
using accel::UopKernelBuilder;

void Emitter::dma_copy(const DmaCopy& copy) {
  Operand dst = operand(copy.dst), src = operand(copy.src);
  if (eval(copy.pad_value) != 0) fail("DMA padding with a non-zero value");
  std::vector<Dim> dims;
  for (const DmaDim& d : copy.dims)
    dims.push_back({eval(d.extent), eval(d.dst_stride), eval(d.src_stride), eval(d.pad_before), eval(d.pad_after)});
  if (dst.sram && !src.sram) return load(dst, src, dims);
  if (!dst.sram && src.sram && src.sram->mem == MemType::Acc) return store(dst, src, dims);
  fail("dma_copy from '" + src.buffer->name + "' to '" + dst.buffer->name +
       "': only device memory -> acc.inp/acc.wgt/acc.acc and acc.acc -> device memory are supported");
}

namespace {
// Splits copy dimensions into the innermost ones that make up exactly one entry (contiguous on
// both sides, unpadded) and the outer ones (extent-1 dimensions dropped). Returns false if the
// innermost dimensions do not form whole entries.
bool split_entry(std::vector<std::array<int64_t, 5>>& outer, const std::vector<std::array<int64_t, 5>>& dims,
                 int64_t entry) {
  int64_t prod = 1;
  size_t k = dims.size();
  while (prod < entry && k > 0) {
    const auto& d = dims[--k];
    if (d[1] != prod || d[2] != prod || d[3] != 0 || d[4] != 0) return false;
    prod *= d[0];
  }
  if (prod != entry) return false;
  for (size_t i = 0; i < k; ++i)
    if (dims[i][0] != 1) outer.push_back(dims[i]);
  return true;
}
}  // namespace

// Splits a copy into the entries made by its innermost dimensions and (at most) two outer
// dimensions x (inner) and y; `what` names the copy in errors.
Emitter::TwoD Emitter::two_d(const std::vector<Dim>& dims, int64_t e, const std::string& what) const {
  std::vector<std::array<int64_t, 5>> raw, outer;
  for (auto& d : dims) raw.push_back({d.extent, d.dst_stride, d.src_stride, d.before, d.after});
  if (!split_entry(outer, raw, e))
    fail(what + ": the innermost dimensions do not form whole " + std::to_string(e) + "-element entries");
  // Drop unit dimensions, and merge a dimension into the one inside it when both memories lay
  // them out contiguously and neither pads (e.g. a 3x3 kernel window is one row of 9 entries).
  std::vector<std::array<int64_t, 5>> merged;
  for (auto& d : outer) {
    if (d[0] == 1 && d[3] == 0 && d[4] == 0) continue;
    merged.push_back(d);
  }
  for (size_t i = merged.size(); i-- > 1;) {
    auto &a = merged[i - 1], &b = merged[i];
    if (a[3] || a[4] || b[3] || b[4] || a[1] != b[0] * b[1] || a[2] != b[0] * b[2]) continue;
    b[0] *= a[0];
    merged.erase(merged.begin() + int64_t(i - 1));
  }
  outer = merged;
  // An innermost dimension strided in either memory (a tile one column wide: its rows are one
  // entry each) is the row dimension of rows of one entry; the others step DMA instructions.
  if (outer.size() >= 2 && (outer.back()[1] != e || outer.back()[2] != e) && !outer.back()[3] && !outer.back()[4]) {
    TwoD t{{1, e, e, 0, 0}, outer.back(), true, {}};
    outer.pop_back();
    for (const auto& d : outer) {
      if (d[3] || d[4]) fail(what + ": padding in a dimension beyond the two a DMA instruction has");
      t.outer.push_back(d);
    }
    return t;
  }
  TwoD t{{1, e, e, 0, 0}, {1, e, e, 0, 0}, outer.size() >= 2, {}};
  while (outer.size() > 2) {  // further dimensions become separate DMA instructions
    if (outer[0][3] || outer[0][4]) fail(what + ": padding in a dimension beyond the two a DMA instruction has");
    t.outer.push_back(outer[0]);
    outer.erase(outer.begin());
  }
  if (outer.size() == 1 && (outer[0][1] != e || outer[0][2] != e) && !outer[0][3] && !outer[0][4]) {
    t.has_y = true;  // entries strided in one memory: rows of one entry each
    t.y = outer[0];
  } else if (!outer.empty()) {
    t.x = outer.back();
    if (t.has_y) t.y = outer[0];
  }
  if (!t.has_y) t.y = {1, t.x[0] * t.x[1], t.x[0] * t.x[2], 0, 0};  // one row
  return t;
}

void Emitter::for_each_outer(const TwoD& t, const std::function<void(int64_t, int64_t)>& f) const {
  std::function<void(size_t, int64_t, int64_t)> rec = [&](size_t d, int64_t dst, int64_t src) {
    if (d == t.outer.size()) return f(dst, src);
    for (int64_t i = 0; i < t.outer[d][0]; ++i) rec(d + 1, dst + i * t.outer[d][1], src + i * t.outer[d][2]);
  };
  rec(0, 0, 0);
}

void Emitter::load(const Operand& dst, const Operand& src, std::vector<Dim> dims) {
  MemType mem = dst.sram->mem;
  int64_t e = elements_per_entry(mem);
  TwoD t = two_d(dims, e, "DMA into '" + dst.buffer->name + "'");
  auto &x = t.x, &y = t.y;
  if (x[1] != e || x[2] != e || y[1] != x[0] * e || y[2] % e)
    fail("DMA into '" + dst.buffer->name + "': rows must be contiguous entries in both memories");
  int64_t x_size = x[0] - x[3] - x[4], y_size = y[0] - y[3] - y[4];
  if (x_size <= 0 || y_size <= 0) fail("DMA into '" + dst.buffer->name + "': a tile made only of padding");
  Module m = mem == MemType::Acc ? Module::Compute : Module::Load;
  for_each_outer(t, [&](int64_t dst_off, int64_t src_off) {
    if (dst_off % e) fail("DMA into '" + dst.buffer->name + "': an outer dimension does not step by whole entries");
    uint32_t base = entry_of(dst, "DMA destination") + uint32_t(dst_off / e);
    const uint32_t entries = uint32_t(y[0] * x[0]), stride = uint32_t(t.has_y ? y[2] / e : x_size);
    const uint64_t addr = dram_address(src, src_off, "DMA into '" + dst.buffer->name + "'");
    const std::array<uint64_t, 9> fields = {base,           addr,           uint64_t(y_size), uint64_t(x_size), stride,
                                            uint64_t(y[3]), uint64_t(y[4]), uint64_t(x[3]),   uint64_t(x[4])};
    refuse_reading_stored(addr, dma_end(addr, uint32_t(y_size), uint32_t(x_size), stride, mem),
                          "DMA into '" + dst.buffer->name + "' from '" + src.buffer->name + "'");
    if (mem == MemType::Acc) {
      auto held = held_acc_loads_.find(fields);
      if (held != held_acc_loads_.end() && acc_load_held(held->second, base, entries)) return;
    }
    Access a;
    for (uint32_t k = 0; k < entries; ++k) a.writes.push_back({mem, base + k});
    sync_before(m, a);
    if (mem == MemType::Acc) {
      std::vector<uint32_t> loaded;
      for (const auto& w : a.writes) loaded.push_back(w.second);
      resets_.touch(loaded);
    }
    drv_.load_2d(mem, base, addr, uint32_t(y_size), uint32_t(x_size), stride, uint32_t(y[3]), uint32_t(y[4]),
                 uint32_t(x[3]), uint32_t(x[4]));
    record_after(m, a);
    if (mem == MemType::Acc) held_acc_loads_[fields] = int64_t(drv_.stream().size()) - 1;
  });
}

// The LOAD's entries still hold what it loaded: no later LOAD wrote them, and no GEMM or ALU
// instruction (recorded as writes of their out copies, entry for entry) did since.
bool Emitter::acc_load_held(int64_t index, uint32_t base, uint32_t entries) {
  for (uint32_t k = 0; k < entries; ++k)
    if (entry_state(MemType::Acc, base + k).last_write != index ||
        entry_state(MemType::Out, base + k).last_write > index)
      return false;
  return true;
}

uint64_t Emitter::dma_end(uint64_t addr, uint32_t rows, uint32_t cols, uint32_t stride, MemType mem) const {
  return addr + (uint64_t(rows - 1) * stride + cols) * uint64_t(accel::entry_bytes(c_, mem));
}

// Dependency tokens pass between neighbouring modules over scratchpad entries only: nothing orders a
// LOAD after a STORE of the same stream to the same device memory (the load module is no neighbour
// of the store module), so such a LOAD could read the bytes before or after the STORE lands.
// Compiled models give every kernel's output its own memory; anything else is refused here.
void Emitter::refuse_reading_stored(uint64_t begin, uint64_t end, const std::string& what) const {
  for (const auto& [b, e] : stored_) {
    if (!(b < end && begin < e)) continue;
    std::ostringstream msg;
    msg << what << ": reads device memory [0x" << std::hex << begin << ", 0x" << end
        << ") that a STORE of this kernel wrote ([0x" << b << ", 0x" << e
        << ")); no dependency token orders a LOAD after a STORE, so the kernel's outputs need memory of their own";
    fail(msg.str());
  }
}

void Emitter::store(const Operand& dst, const Operand& src, std::vector<Dim> dims) {
  int64_t e = elements_per_entry(MemType::Out);
  TwoD t = two_d(dims, e, "DMA from '" + src.buffer->name + "'");
  auto &x = t.x, &y = t.y;
  if (x[1] != e || x[2] != e || y[2] != x[0] * e || y[1] % e)
    fail("DMA from '" + src.buffer->name + "': rows must be contiguous entries in both memories");
  for_each_outer(t, [&](int64_t dst_off, int64_t src_off) {  // dst: DRAM, src: the scratchpad
    if (src_off % e) fail("DMA from '" + src.buffer->name + "': an outer dimension does not step by whole entries");
    uint32_t base = entry_of(src, "DMA source") + uint32_t(src_off / e);
    Access a;
    for (uint32_t k = 0; k < uint32_t(y[0] * x[0]); ++k) a.reads.push_back({MemType::Out, base + k});
    sync_before(Module::Store, a);
    const uint64_t addr = dram_address(dst, dst_off, "DMA from '" + src.buffer->name + "'");
    const uint32_t stride = uint32_t(t.has_y ? y[1] / e : x[0]);
    drv_.store_2d(base, addr, uint32_t(y[0]), uint32_t(x[0]), stride);
    record_after(Module::Store, a);
    stored_.push_back({addr, dma_end(addr, uint32_t(y[0]), uint32_t(x[0]), stride, MemType::Out)});
  });
}

}  // namespace loom::codegen::accel_backend
