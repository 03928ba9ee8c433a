#include "loom/accel/driver.h"

#include <algorithm>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::accel {

std::string UopKernel::key() const {
  std::ostringstream os;
  for (auto& l : loops)
    os << "L" << l.extent << "," << l.dst_factor << "," << l.src_factor << "," << l.wgt_factor << ";";
  for (auto& u : uops) os << "U" << u.dst << "," << u.src << "," << u.wgt << ";";
  return os.str();
}

UopKernelBuilder& UopKernelBuilder::loop(uint32_t extent, uint32_t dst_factor, uint32_t src_factor,
                                         uint32_t wgt_factor) {
  if (k_.loops.size() == 2) LOOM_THROW(IsaError, "micro-op kernel: at most two loop levels");
  if (!k_.uops.empty()) LOOM_THROW(IsaError, "micro-op kernel: loops must be declared before the micro-ops");
  if (extent == 0) LOOM_THROW(IsaError, "micro-op kernel: zero loop extent");
  k_.loops.push_back({extent, dst_factor, src_factor, wgt_factor});
  return *this;
}

std::vector<uint32_t> UopKernel::entries(Field field) const {
  // The micro-op's field and the loops' factor for it.
  uint32_t MicroOp::*entry = field == Field::Dst ? &MicroOp::dst : field == Field::Src ? &MicroOp::src : &MicroOp::wgt;
  uint32_t Loop::*factor = field == Field::Dst   ? &Loop::dst_factor
                           : field == Field::Src ? &Loop::src_factor
                                                 : &Loop::wgt_factor;
  std::vector<uint32_t> out;
  Loop outer{1, 0, 0, 0}, inner{1, 0, 0, 0};
  if (loops.size() == 2) outer = loops[0], inner = loops[1];
  if (loops.size() == 1) inner = loops[0];
  for (uint32_t o = 0; o < outer.extent; ++o)
    for (uint32_t n = 0; n < inner.extent; ++n)
      for (const MicroOp& u : uops) out.push_back(u.*entry + o * (outer.*factor) + n * (inner.*factor));
  return out;
}

UopKernelBuilder& UopKernelBuilder::push(uint32_t dst, uint32_t src, uint32_t wgt) {
  k_.uops.push_back({dst, src, wgt});
  return *this;
}

UopKernel UopKernelBuilder::build() const {
  if (k_.uops.empty()) LOOM_THROW(IsaError, "micro-op kernel: no micro-ops");
  return k_;
}

Driver::Driver(AccelDevice& device, AccelConfig config) : device_(device), config_(std::move(config)) {
  config_.validate();
}

Driver::~Driver() {
  // A device that is gone (a remote server stopped) cannot free; a destructor must not throw, and
  // the server frees a vanished client's memory itself.
  auto free = [&](uint64_t addr) {
    try {
      device_.free(addr);
    } catch (const Error&) {
    }
  };
  for (auto& [k, info] : kernels_) free(info.dram.addr);
  if (insn_buffer_.bytes) free(insn_buffer_.addr);
  for (auto& b : sealed_) free(b.addr);
  for (auto& b : images_) free(b.addr);
}

DeviceBuffer Driver::alloc(uint64_t bytes, uint64_t alignment) {
  // Every buffer can be addressed in entries of any scratchpad: align to the largest entry.
  uint64_t align = std::max<uint64_t>(64, alignment);
  for (int e :
       {config_.inp_block_bytes(), config_.wgt_block_bytes(), config_.acc_block_bytes(), config_.out_block_bytes()})
    align = std::max<uint64_t>(align, uint64_t(e));
  return {device_.alloc(bytes, align), bytes};
}
void Driver::free(const DeviceBuffer& b) { device_.free(b.addr); }

void Driver::copy_to_device(const DeviceBuffer& b, const void* src, uint64_t bytes, uint64_t offset) {
  if (offset + bytes > b.bytes)
    LOOM_THROW(DeviceError, "copy_to_device: ", bytes, " bytes at offset ", offset, " overrun a ", b.bytes,
               "-byte buffer");
  device_.write(b.addr + offset, src, bytes);
}

void Driver::copy_from_device(const DeviceBuffer& b, void* dst, uint64_t bytes, uint64_t offset) {
  if (offset + bytes > b.bytes)
    LOOM_THROW(DeviceError, "copy_from_device: ", bytes, " bytes at offset ", offset, " overrun a ", b.bytes,
               "-byte buffer");
  device_.read(b.addr + offset, dst, bytes);
}

uint32_t Driver::dram_entry(uint64_t addr, MemType mem) const {
  int bytes = entry_bytes(config_, mem);
  if (addr % bytes)
    LOOM_THROW(DeviceError, "DMA address 0x", std::hex, addr, std::dec, " is not aligned to a ", bytes, "-byte ",
               to_string(mem), " entry");
  if (addr / bytes > 0xffffffffull)
    LOOM_THROW(DeviceError, "DMA address 0x", std::hex, addr, " is beyond the 32-bit entry range");
  return uint32_t(addr / bytes);
}

void Driver::push(Instruction i) {
  DepFlags& pop = pending_pop_[uint32_t(i.module())];
  i.dep.pop_prev |= pop.pop_prev;
  i.dep.pop_next |= pop.pop_next;
  pop = {};
  check_instruction(i, config_, stream_.size());
  stream_.push_back(i);
}

Instruction Driver::noop(Module m) const {
  Instruction i;
  i.opcode = m == Module::Store ? Opcode::Store : Opcode::Load;
  i.mem = m == Module::Load ? MemType::Inp : m == Module::Store ? MemType::Out : MemType::Uop;
  return i;  // y_size = x_size = 0
}

void Driver::load_2d(MemType mem, uint32_t sram_base, uint64_t dram_addr, uint32_t y_size, uint32_t x_size,
                     uint32_t x_stride, uint32_t y_pad0, uint32_t y_pad1, uint32_t x_pad0, uint32_t x_pad1) {
  Instruction i;
  i.opcode = Opcode::Load;
  i.mem = mem;
  i.sram_base = sram_base;
  i.dram_base = dram_entry(dram_addr, mem);
  i.y_size = y_size;
  i.x_size = x_size;
  i.x_stride = x_stride;
  i.y_pad0 = y_pad0;
  i.y_pad1 = y_pad1;
  i.x_pad0 = x_pad0;
  i.x_pad1 = x_pad1;
  push(i);
}

void Driver::store_2d(uint32_t sram_base, uint64_t dram_addr, uint32_t y_size, uint32_t x_size, uint32_t x_stride) {
  Instruction i;
  i.opcode = Opcode::Store;
  i.mem = MemType::Out;
  i.sram_base = sram_base;
  i.dram_base = dram_entry(dram_addr, MemType::Out);
  i.y_size = y_size;
  i.x_size = x_size;
  i.x_stride = x_stride;
  push(i);
}

uint32_t Driver::place_kernel(const UopKernel& k) {
  std::string key = k.key();
  auto it = kernels_.find(key);
  if (it == kernels_.end()) {  // first use anywhere: upload once
    std::vector<uint32_t> words;
    for (auto& u : k.uops) words.push_back(encode_uop(u, config_));
    DeviceBuffer b = alloc(words.size() * 4);
    copy_to_device(b, words.data(), words.size() * 4);
    it = kernels_.emplace(key, KernelInfo{b, words}).first;
  }
  auto res = resident_.find(key);
  if (res != resident_.end()) return res->second;
  const uint32_t count = uint32_t(it->second.words.size());
  if (count > config_.uop_depth())
    LOOM_THROW(IsaError, "micro-op kernel of ", count, " micro-ops exceeds the uop buffer (", config_.uop_depth(), ")");
  if (uop_top_ + count > config_.uop_depth()) {  // evict everything: later GEMMs reload what they need
    resident_.clear();
    uop_top_ = 0;
  }
  uint32_t base = uop_top_;
  load_2d(MemType::Uop, base, it->second.dram.addr, 1, count, count);
  resident_[key] = base;
  uop_top_ += count;
  return base;
}

Instruction Driver::compute_insn(Opcode op, const UopKernel& k, uint32_t base) {
  Instruction i;
  i.opcode = op;
  i.uop_begin = base;
  i.uop_end = base + uint32_t(k.uops.size());
  UopKernel::Loop outer{1, 0, 0, 0}, inner{1, 0, 0, 0};
  if (k.loops.size() == 2) {
    outer = k.loops[0];
    inner = k.loops[1];
  } else if (k.loops.size() == 1) {
    inner = k.loops[0];
  }
  i.iter_out = outer.extent;
  i.iter_in = inner.extent;
  i.dst_factor_out = outer.dst_factor;
  i.dst_factor_in = inner.dst_factor;
  i.src_factor_out = outer.src_factor;
  i.src_factor_in = inner.src_factor;
  i.wgt_factor_out = outer.wgt_factor;
  i.wgt_factor_in = inner.wgt_factor;
  return i;
}

void Driver::gemm(const UopKernel& kernel, bool reset) {
  uint32_t base = place_kernel(kernel);
  Instruction i = compute_insn(Opcode::Gemm, kernel, base);
  i.reset = reset;
  push(i);
}

void Driver::alu(const UopKernel& kernel, AluOp op, bool use_imm, int32_t imm) {
  uint32_t base = place_kernel(kernel);
  Instruction i = compute_insn(Opcode::Alu, kernel, base);
  i.wgt_factor_out = i.wgt_factor_in = 0;
  i.alu_op = op;
  i.use_imm = use_imm;
  i.imm = imm;
  push(i);
  last_alu_kernel_ = kernel;
  last_alu_index_ = stream_.size() - 1;
}

bool Driver::fold_into_clip(const UopKernel& kernel, AluOp op, int32_t imm) {
  if ((op != AluOp::Min && op != AluOp::Max) || stream_.empty()) return false;
  const DepFlags& waiting = pending_pop_[uint32_t(Module::Compute)];
  if (waiting.pop_prev || waiting.pop_next) return false;
  Instruction& last = stream_.back();
  const AluOp other = op == AluOp::Min ? AluOp::Max : AluOp::Min;
  if (last.opcode != Opcode::Alu || !last.use_imm || last.alu_op != other || last.dep.push_prev || last.dep.push_next)
    return false;
  auto resident = resident_.find(kernel.key());
  if (resident == resident_.end()) return false;
  Instruction same = compute_insn(Opcode::Alu, kernel, resident->second);
  if (same.uop_begin != last.uop_begin || same.uop_end != last.uop_end || same.iter_out != last.iter_out ||
      same.iter_in != last.iter_in || same.dst_factor_out != last.dst_factor_out ||
      same.dst_factor_in != last.dst_factor_in || same.src_factor_out != last.src_factor_out ||
      same.src_factor_in != last.src_factor_in)
    return false;
  const int32_t lo = op == AluOp::Max ? imm : last.imm, hi = op == AluOp::Min ? imm : last.imm;
  if (lo < -128 || hi > 127 || lo > hi) return false;
  last.alu_op = AluOp::Clip;
  last.imm = clip_imm(lo, hi);
  fuse_shift_into_clip(kernel);
  return true;
}

namespace {
// Whether a kernel's iterations name each accumulator entry once: a SHR pass and then a CLIP pass
// equal one SHRSAT only then (an entry named twice would be shifted twice before one clamp).
bool names_each_entry_once(const UopKernel& k) {
  std::vector<uint32_t> dst = k.entries(UopKernel::Field::Dst);
  std::sort(dst.begin(), dst.end());
  return std::adjacent_find(dst.begin(), dst.end()) == dst.end();
}
}  // namespace

void Driver::fuse_shift_into_clip(const UopKernel& kernel) {
  if (stream_.size() < 2 || !names_each_entry_once(kernel)) return;
  const Instruction& clip = stream_.back();
  Instruction& shr = stream_[stream_.size() - 2];
  if (shr.opcode != Opcode::Alu || shr.alu_op != AluOp::Shr || !shr.use_imm || shr.dep.push_prev || shr.dep.push_next ||
      clip.dep.pop_prev || clip.dep.pop_next || clip.dep.push_prev || clip.dep.push_next)
    return;
  if (shr.uop_begin != clip.uop_begin || shr.uop_end != clip.uop_end || shr.iter_out != clip.iter_out ||
      shr.iter_in != clip.iter_in || shr.dst_factor_out != clip.dst_factor_out ||
      shr.dst_factor_in != clip.dst_factor_in)
    return;
  ShrSatImm f;
  if (!ShrSatImm::from_clamp(shr.imm, clip_lo(clip.imm), clip_hi(clip.imm), &f)) return;
  shr.alu_op = AluOp::ShrSat;
  shr.imm = f.encode();
  stream_.pop_back();
  last_alu_index_ = stream_.size() - 1;  // the SHRSAT, over the same kernel
}

void Driver::split_closing_store() {
  const size_t n = stream_.size();
  if (n < 2 || last_alu_index_ != n - 2) return;
  const Instruction alu = stream_[n - 2], store = stream_[n - 1];
  const UopKernel k = last_alu_kernel_;
  const DepFlags& compute_pops = pending_pop_[uint32_t(Module::Compute)];
  const DepFlags& store_pops = pending_pop_[uint32_t(Module::Store)];
  if (store.opcode != Opcode::Store || !store.dep.pop_prev || store.dep.pop_next || store.dep.push_next ||
      !alu.dep.push_next || alu.dep.push_prev || compute_pops.pop_prev || compute_pops.pop_next ||
      store_pops.pop_prev || store_pops.pop_next)
    return;
  // One micro-op over consecutive entries, which the STORE copies out as one row.
  if (k.uops.size() != 1 || k.loops.size() != 1 || k.loops[0].dst_factor != 1) return;
  const UopKernel::Loop loop = k.loops[0];
  const MicroOp u = k.uops[0];
  if (store.y_size != 1 || store.x_size != loop.extent || store.sram_base != u.dst) return;
  // The micro-op LOAD placed for the ALU alone goes too (the parts load their own micro-ops).
  const bool drop_load = n >= 3 && stream_[n - 3].opcode == Opcode::Load && stream_[n - 3].mem == MemType::Uop &&
                         stream_[n - 3].sram_base == alu.uop_begin &&
                         stream_[n - 3].x_size == alu.uop_end - alu.uop_begin && !stream_[n - 3].dep.push_prev &&
                         !stream_[n - 3].dep.push_next;
  uint32_t parts = kClosingStoreParts;
  while (parts > 1 && (loop.extent % parts || loop.extent / parts < kClosingStorePartEntries)) parts /= 2;
  if (parts < 2) return;
  const uint32_t m = loop.extent / parts;
  DepFlags pops = alu.dep;
  if (drop_load) {
    pops.pop_prev |= stream_[n - 3].dep.pop_prev;
    pops.pop_next |= stream_[n - 3].dep.pop_next;
    resident_.erase(k.key());
    if (uop_top_ == alu.uop_end) uop_top_ = alu.uop_begin;
  }
  stream_.resize(n - (drop_load ? 3 : 2));
  // The ALU's pops go on the first compute instruction now (a micro-op LOAD, or the first part).
  pending_pop_[uint32_t(Module::Compute)] = {pops.pop_prev, pops.pop_next, false, false};
  UopKernelBuilder b;
  b.loop(m, 1, loop.src_factor);
  for (uint32_t c = 0; c < parts; ++c) b.push(u.dst + c * m, u.src + c * m * loop.src_factor);
  const UopKernel each = b.build();
  const uint32_t base = place_kernel(each);
  for (uint32_t c = 0; c < parts; ++c) {
    Instruction i = compute_insn(Opcode::Alu, each, base);
    i.uop_begin = base + c;
    i.uop_end = base + c + 1;
    i.alu_op = alu.alu_op;
    i.use_imm = alu.use_imm;
    i.imm = alu.imm;
    i.dep.push_next = true;
    push(i);
  }
  for (uint32_t c = 0; c < parts; ++c) {
    Instruction i = store;
    i.sram_base = store.sram_base + c * m;
    i.dram_base = store.dram_base + c * m;
    i.x_size = i.x_stride = m;
    i.dep = {};
    i.dep.pop_prev = true;
    i.dep.push_prev = c + 1 == parts && store.dep.push_prev;
    push(i);
  }
  last_alu_index_ = SIZE_MAX;
}

void Driver::preset_reset(size_t index, int32_t imm) {
  if (index >= stream_.size() || stream_[index].opcode != Opcode::Gemm || !stream_[index].reset)
    LOOM_THROW(IsaError, "preset_reset: instruction ", index, " is not a GEMM reset");
  if (imm < -(1 << (IsaLayout::kImmBits - 1)) || imm >= (1 << (IsaLayout::kImmBits - 1)))
    LOOM_THROW(IsaError, "preset_reset: immediate ", imm, " does not fit ", IsaLayout::kImmBits, " bits");
  Instruction& i = stream_[index];
  i.opcode = Opcode::Alu;
  i.reset = false;
  i.wgt_factor_out = i.wgt_factor_in = 0;
  i.alu_op = AluOp::Mov;
  i.use_imm = true;
  i.imm = imm;
}

static void check_adjacent(Module from, Module to, const char* what) {
  int d = int(to) - int(from);
  if (d != 1 && d != -1)
    LOOM_THROW(IsaError, what, "(", to_string(from), " -> ", to_string(to),
               "): only neighbouring modules exchange tokens");
}

void Driver::dep_push(Module from, Module to) {
  check_adjacent(from, to, "dep_push");
  // The last instruction of `from` in the stream; a no-op if it has none yet.
  Instruction* last = nullptr;
  for (auto it = stream_.rbegin(); it != stream_.rend(); ++it)
    if (it->module() == from) {
      last = &*it;
      break;
    }
  bool forward = int(to) > int(from);
  // Pops already requested for `from` belong to an instruction after `last`: the push must come
  // after them, so it rides on a no-op that also carries those pops.
  const DepFlags& pending = pending_pop_[uint32_t(from)];
  if (!last || pending.pop_prev || pending.pop_next || (forward ? last->dep.push_next : last->dep.push_prev)) {
    push(noop(from));
    last = &stream_.back();
  }
  (forward ? last->dep.push_next : last->dep.push_prev) = true;
}

void Driver::add_push(size_t index, Module to) {
  if (index >= stream_.size()) LOOM_THROW(IsaError, "add_push: no instruction ", index, " in the stream");
  Instruction& i = stream_[index];
  check_adjacent(i.module(), to, "add_push");
  bool forward = int(to) > int(i.module());
  bool& flag = forward ? i.dep.push_next : i.dep.push_prev;
  if (flag) LOOM_THROW(IsaError, "add_push: instruction ", index, " already pushes to the ", to_string(to), " module");
  flag = true;
}

void Driver::dep_pop(Module from, Module to) {
  check_adjacent(from, to, "dep_pop");
  DepFlags& pop = pending_pop_[uint32_t(to)];
  bool from_prev = int(from) < int(to);
  bool& flag = from_prev ? pop.pop_prev : pop.pop_next;
  if (flag) push(noop(to));  // already waiting on that neighbour: consume with a no-op first
  (from_prev ? pending_pop_[uint32_t(to)].pop_prev : pending_pop_[uint32_t(to)].pop_next) = true;
}

namespace {
bool loads_micro_ops(const Instruction& i) { return i.opcode == Opcode::Load && i.mem == MemType::Uop && i.x_size; }
}  // namespace

void Driver::load_micro_ops_once() {
  std::map<uint64_t, const std::vector<uint32_t>*> words_at;  // a kernel's DRAM address -> its words
  for (const auto& [key, info] : kernels_) words_at[info.dram.addr] = &info.words;
  std::vector<uint32_t> image;
  std::vector<bool> written;
  size_t loads = 0;
  for (const Instruction& i : stream_) {
    if (!loads_micro_ops(i)) continue;
    auto w = words_at.find(uint64_t(i.dram_base) * AccelConfig::kUopBytes);
    if (w == words_at.end() || w->second->size() != i.x_size || i.y_size != 1 || i.dep.push_prev || i.dep.push_next)
      return;
    if (image.size() < i.sram_base + i.x_size) image.resize(i.sram_base + i.x_size), written.resize(image.size());
    for (uint32_t k = 0; k < i.x_size; ++k) {
      if (written[i.sram_base + k]) return;  // an entry loaded twice: the loads are not one image
      written[i.sram_base + k] = true;
      image[i.sram_base + k] = (*w->second)[k];
    }
    ++loads;
  }
  if (loads < 2) return;
  // The loads go; their pops move to the compute module's next instruction (not where that one
  // pops the same queue already: one pop would then stand for two tokens).
  std::vector<Instruction> kept;
  DepFlags carried;
  for (Instruction i : stream_) {
    if (loads_micro_ops(i)) {
      carried.pop_prev |= i.dep.pop_prev;
      carried.pop_next |= i.dep.pop_next;
      continue;
    }
    if (i.module() == Module::Compute) {
      if ((i.dep.pop_prev && carried.pop_prev) || (i.dep.pop_next && carried.pop_next)) return;
      i.dep.pop_prev |= carried.pop_prev;
      i.dep.pop_next |= carried.pop_next;
      carried = {};
    }
    kept.push_back(i);
  }
  const DepFlags& pending = pending_pop_[uint32_t(Module::Compute)];
  if ((pending.pop_prev && carried.pop_prev) || (pending.pop_next && carried.pop_next)) return;
  DeviceBuffer b = alloc(image.size() * 4);
  copy_to_device(b, image.data(), image.size() * 4);
  images_.push_back(b);
  Instruction all;
  all.opcode = Opcode::Load;
  all.mem = MemType::Uop;
  all.dram_base = dram_entry(b.addr, MemType::Uop);
  all.y_size = 1;
  all.x_size = all.x_stride = uint32_t(image.size());
  check_instruction(all, config_, 0);
  kept.insert(kept.begin(), all);
  stream_ = std::move(kept);
  pending_pop_[uint32_t(Module::Compute)].pop_prev |= carried.pop_prev;
  pending_pop_[uint32_t(Module::Compute)].pop_next |= carried.pop_next;
}

std::vector<InsnWord> Driver::finish_words() {
  if (finish_rewrites_) {
    split_closing_store();
    load_micro_ops_once();
  }
  // FINISH runs on the compute module; make it wait until the store module has drained.
  bool has_store = false;
  for (auto& i : stream_) has_store |= i.module() == Module::Store;
  if (has_store) {
    dep_push(Module::Store, Module::Compute);
    dep_pop(Module::Store, Module::Compute);
  }
  // Pops requested for the load and store modules with no instruction left to carry them.
  for (Module m : {Module::Load, Module::Store}) {
    const DepFlags& p = pending_pop_[uint32_t(m)];
    if (p.pop_prev || p.pop_next) push(noop(m));
  }
  Instruction fin;
  fin.opcode = Opcode::Finish;
  push(fin);
  IsaLayout layout(config_);
  std::vector<InsnWord> words;
  for (auto& i : stream_) words.push_back(encode(i, layout));
  return words;
}

std::pair<uint64_t, uint32_t> Driver::finalize_stream() {
  std::vector<InsnWord> words = finish_words();
  uint64_t bytes = words.size() * 16;
  if (insn_buffer_.bytes < bytes) {
    if (insn_buffer_.bytes) device_.free(insn_buffer_.addr);
    insn_buffer_ = alloc(std::max<uint64_t>(bytes, 4096));
  }
  device_.write(insn_buffer_.addr, words.data(), bytes);
  return {insn_buffer_.addr, uint32_t(words.size())};
}

Driver::SealedStream Driver::seal_stream() {
  std::vector<InsnWord> words = finish_words();
  DeviceBuffer b = alloc(words.size() * 16);
  sealed_.push_back(b);
  device_.write(b.addr, words.data(), b.bytes);
  SealedStream s{b.addr, uint32_t(words.size()), stream_};
  reset_stream();
  return s;
}

void Driver::reset_stream() {
  stream_.clear();
  resident_.clear();
  uop_top_ = 0;
  for (auto& p : pending_pop_) p = {};
  last_alu_index_ = SIZE_MAX;
}

std::map<std::string, uint64_t> Driver::synchronize(std::chrono::milliseconds timeout) {
  auto [addr, count] = finalize_stream();
  reset_stream();
  device_.launch(addr, count);
  device_.wait(timeout);
  return device_.counters();
}

}  // namespace loom::accel
