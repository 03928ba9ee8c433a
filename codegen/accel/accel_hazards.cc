// Dependency tokens from scratchpad hazards (read-after-write, write-after-read,
// write-after-write) between the load, compute and store modules.
#include "accel_emitter.h"

#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"

namespace loom::codegen::accel_backend {

using namespace loom::ir;
using accel::MemType;
using accel::Module;
using accel::UopKernelBuilder;

Emitter::EntryState& Emitter::entry_state(MemType mem, uint32_t entry) {
  std::vector<EntryState>& v = hazards_[int(mem)];
  if (entry >= v.size()) v.resize(size_t(entry) + 1);
  return v[entry];
}

void Emitter::sync_before(Module m, const Access& a) {
  for (Module from : {Module::Load, Module::Compute, Module::Store}) {
    if (std::abs(int(from) - int(m)) != 1) continue;  // only neighbours share scratchpads
    int64_t need = -1;
    for (auto& [mem, e] : a.reads) {
      EntryState& st = entry_state(mem, e);
      if (st.last_write >= 0 && st.writer == from) need = std::max(need, st.last_write);
    }
    for (auto& [mem, e] : a.writes) {
      EntryState& st = entry_state(mem, e);
      if (st.last_write >= 0 && st.writer == from) need = std::max(need, st.last_write);
      need = std::max(need, st.last_read[int(from)]);
    }
    if (need > synced_[int(from)][int(m)]) {
      drv_.add_push(size_t(need), m);
      drv_.dep_pop(from, m);
      synced_[int(from)][int(m)] = need;
    }
  }
}

void Emitter::record_after(Module m, const Access& a) {
  int64_t index = int64_t(drv_.stream().size()) - 1;
  for (auto& [mem, e] : a.reads) entry_state(mem, e).last_read[int(m)] = index;
  for (auto& [mem, e] : a.writes) {
    EntryState& st = entry_state(mem, e);
    st.last_write = index;
    st.writer = m;
  }
}

// The scratchpad entries a GEMM/ALU kernel touches: it writes the out entries of its
// destinations (every result is also narrowed into the out buffer) and, for GEMM updates, reads
// input and weight entries.
Emitter::Access Emitter::kernel_access(const accel::UopKernel& k, bool gemm_reads) const {
  Access a;
  for (uint32_t e : k.entries(UopField::Dst)) a.writes.push_back({MemType::Out, e});
  if (!gemm_reads) return a;
  for (uint32_t e : k.entries(UopField::Src)) a.reads.push_back({MemType::Inp, e});
  for (uint32_t e : k.entries(UopField::Wgt)) a.reads.push_back({MemType::Wgt, e});
  return a;
}

}  // namespace loom::codegen::accel_backend
