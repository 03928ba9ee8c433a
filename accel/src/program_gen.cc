// Constrained-random accelerator programs (program_gen.h).
#include "loom/accel/program_gen.h"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "loom/accel/driver.h"
#include "loom/runtime/error.h"
#include "strict_json.h"

namespace loom::accel {

void ProgramConstraints::validate(const std::string& origin) const {
  auto range = [&](const char* field, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi)) LOOM_THROW(ConfigError, origin, ": ", field, " is ", v, ", not in [", lo, ", ", hi, "]");
  };
  range("length", length, 1, 100000);
  for (auto [field, w] : {std::pair{"weights.load_inp", load_inp},
                          {"weights.load_wgt", load_wgt},
                          {"weights.load_acc", load_acc},
                          {"weights.gemm", gemm},
                          {"weights.alu", alu},
                          {"weights.store", store},
                          {"weights.burst", burst}})
    range(field, w, 0, 1e6);
  if (load_inp + load_wgt + load_acc + gemm + alu + store + burst <= 0)
    LOOM_THROW(ConfigError, origin, ": every weight is 0: no instruction can be drawn");
  range("max_pad", max_pad, 0, 15);
  range("max_rows", max_rows, 1, 16);
  range("max_cols", max_cols, 1, 16);
  range("max_store_rows", max_store_rows, 1, 16);
  range("gemm_reset", gemm_reset, 0, 1);
  range("alu_immediate", alu_immediate, 0, 1);
  range("wide_fields", wide_fields, 0, 1);
}

ProgramConstraints ProgramConstraints::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j = parse_strict_json(text, origin);
  if (!j.is_object()) LOOM_THROW(ConfigError, origin, ": the constraints are a JSON object");
  ProgramConstraints c;
  auto number = [&](const nlohmann::json& v, const std::string& field) {
    if (!v.is_number()) LOOM_THROW(ConfigError, origin, ": ", field, " is ", v.dump(), ", not a number");
    return v.get<double>();
  };
  auto integer = [&](const nlohmann::json& v, const std::string& field) {
    double d = number(v, field);
    if (d != double(int64_t(d)) || std::abs(d) > 1e9)
      LOOM_THROW(ConfigError, origin, ": ", field, " is ", v.dump(), ", not a whole number");
    return int(d);
  };
  for (auto& [key, v] : j.items()) {
    if (key == "length")
      c.length = integer(v, key);
    else if (key == "max_pad")
      c.max_pad = integer(v, key);
    else if (key == "max_rows")
      c.max_rows = integer(v, key);
    else if (key == "max_cols")
      c.max_cols = integer(v, key);
    else if (key == "max_store_rows")
      c.max_store_rows = integer(v, key);
    else if (key == "gemm_reset")
      c.gemm_reset = number(v, key);
    else if (key == "alu_immediate")
      c.alu_immediate = number(v, key);
    else if (key == "wide_fields")
      c.wide_fields = number(v, key);
    else if (key == "weights") {
      if (!v.is_object()) LOOM_THROW(ConfigError, origin, ": weights is ", v.dump(), ", not an object");
      for (auto& [kind, w] : v.items()) {
        double* slot = kind == "load_inp"   ? &c.load_inp
                       : kind == "load_wgt" ? &c.load_wgt
                       : kind == "load_acc" ? &c.load_acc
                       : kind == "gemm"     ? &c.gemm
                       : kind == "alu"      ? &c.alu
                       : kind == "store"    ? &c.store
                       : kind == "burst"    ? &c.burst
                                            : nullptr;
        if (!slot)
          LOOM_THROW(ConfigError, origin, ": weights has no kind '", kind,
                     "' (load_inp, load_wgt, load_acc, gemm, alu, store, burst)");
        *slot = number(w, "weights." + kind);
      }
    } else {
      LOOM_THROW(ConfigError, origin, ": unknown field '", key,
                 "' (length, weights, max_pad, max_rows, max_cols, max_store_rows, gemm_reset, alu_immediate, "
                 "wide_fields)");
    }
  }
  c.validate(origin);
  return c;
}

ProgramConstraints ProgramConstraints::load(const std::string& path) {
  return parse(read_data_file(path, "cannot read the program constraints '" + path + "'"), "'" + path + "'");
}

RandomStream::RandomStream(Driver& drv, const AccelConfig& config, const ProgramConstraints& c, uint64_t seed)
    : drv_(drv), cfg_(config), layout_(config), c_(c), g_(seed) {
  c_.validate("program constraints");
  // The image is aligned to a 4 KiB page and each region of 64 entries straddles a page boundary,
  // so DMA rows cross pages (where the RTL splits its AXI bursts); the out region ends the image.
  const uint64_t entry[4] = {uint64_t(cfg_.inp_block_bytes()), uint64_t(cfg_.wgt_block_bytes()),
                             uint64_t(cfg_.acc_block_bytes()), uint64_t(cfg_.out_block_bytes())};
  uint64_t bytes = 0;
  for (int k = 0; k < 4; ++k) {
    const uint64_t half = kEntries / 2 * entry[k];
    const uint64_t boundary = (bytes + half + kPage - 1) / kPage * kPage;  // the first page boundary past half
    region_[k] = std::max(bytes, (boundary - half) / entry[k] * entry[k]);
    region_[k] = (region_[k] + entry[k] - 1) / entry[k] * entry[k];
    bytes = region_[k] + kEntries * entry[k];
  }
  std::mt19937_64 values(g_());
  initial_.resize(bytes);
  for (auto& v : initial_) v = int8_t(int(values() % 256) - 128);
  image_ = drv_.alloc(initial_.size(), kPage);
  drv_.copy_to_device(image_, initial_.data(), initial_.size());
}

// Each instruction hands a token to the module of the next one, so program order is the only
// legal execution order.
void RandomStream::build() {
  // (burst last: with its weight 0, every other draw is as without it)
  const double weights[] = {c_.load_inp, c_.load_wgt, c_.load_acc, c_.gemm, c_.alu, c_.store, c_.burst};
  std::discrete_distribution<int> kind(std::begin(weights), std::end(weights));
  for (int n = 0; n < c_.length; ++n) {
    switch (kind(g_)) {
      case 0:
        load(MemType::Inp, 0, cfg_.inp_block_bytes(), cfg_.inp_depth());
        break;
      case 1:
        load(MemType::Wgt, 1, cfg_.wgt_block_bytes(), cfg_.wgt_depth());
        break;
      case 2:
        load(MemType::Acc, 2, cfg_.acc_block_bytes(), cfg_.acc_depth());
        break;
      case 3:
        gemm();
        break;
      case 4:
        alu();
        break;
      case 5:
        go(Module::Store);
        drawn_store(0);
        break;
      default:
        burst();
        break;
    }
  }
  go(Module::Store);  // observe the first out entries
  drv_.store_2d(0, image_.addr + region_[3], 1, 32, 32);
}

uint32_t RandomStream::r(uint32_t n) { return n ? uint32_t(g_() % n) : 0; }
bool RandomStream::chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }
bool RandomStream::wide() { return c_.wide_fields > 0 && chance(c_.wide_fields); }

// A loop of one iteration never scales its factors: they may take any value their fields hold.
void RandomStream::widen_factors(UopKernel& k) {
  for (UopKernel::Loop& l : k.loops) {
    if (l.extent != 1 || !wide()) continue;
    l.dst_factor = r(uint32_t{1} << layout_.dst_factor_bits);
    l.src_factor = r(uint32_t{1} << layout_.src_factor_bits);
    l.wgt_factor = r(uint32_t{1} << layout_.wgt_factor_bits);
  }
}

// A transfer of one row never steps its stride: any value of the field at least its row's length.
void RandomStream::widen_stride(uint32_t y, uint32_t x, uint32_t& stride) {
  if (y == 1 && wide()) stride = x + r((uint32_t{1} << IsaLayout::kStrideBits) - x);
}

// Micro-op indices from the whole of their buffers, less a margin for the loops' offsets (narrow
// factors add at most 6); the accumulator indices stay in the lower half of the output buffer,
// which stores overlapping compute do not read (burst()).
void RandomStream::widen_uops(UopKernel& k, bool gemm) {
  constexpr int64_t kMargin = 16;
  const int64_t acc = std::min(cfg_.acc_depth(), cfg_.out_depth()) / 2 - kMargin;
  const int64_t src = (gemm ? cfg_.inp_depth() : std::min(cfg_.acc_depth(), cfg_.out_depth()) / 2) - kMargin;
  const int64_t wgt = cfg_.wgt_depth() - kMargin;
  for (MicroOp& u : k.uops) {
    if (!wide()) continue;
    if (acc > 8) u.dst = r(uint32_t(acc));
    if (src > 8) u.src = r(uint32_t(src));
    if (gemm && wgt > 8) u.wgt = r(uint32_t(wgt));
  }
}

void RandomStream::go(Module next) {
  if (last_ && *last_ != next) {
    bool neighbours = std::abs(int(*last_) - int(next)) == 1;
    if (!neighbours) go(Module::Compute);  // route load <-> store through compute
    if (*last_ == Module::Compute && !emitted_compute_)
      drv_.alu(UopKernelBuilder().push(0, 0).build(), AluOp::Add, true, 0);
    drv_.dep_push(*last_, next);
    drv_.dep_pop(*last_, next);
  }
  emitted_compute_ = next == Module::Compute && last_ == next;
  last_ = next;
}

void RandomStream::load(MemType m, int region, int entry_bytes, int64_t depth) {
  go(m == MemType::Acc ? Module::Compute : Module::Load);
  emitted_compute_ = true;
  load_body(m, region, entry_bytes, depth);
}

// An empty transfer (no rows or no columns) moves nothing and only carries its dependency flags,
// so every other field is free: drawn from its whole range.
void RandomStream::empty_transfer(MemType m) {
  const uint32_t size = r(uint32_t{1} << IsaLayout::kSizeBits), stride = r(uint32_t{1} << IsaLayout::kStrideBits);
  const uint32_t sram = r(uint32_t{1} << layout_.sram_bits);
  const uint64_t dram = uint64_t(uint32_t(g_())) * uint64_t(entry_bytes(cfg_, m));
  const bool no_rows = chance(0.5);
  const uint32_t y = no_rows ? 0 : size, x = no_rows ? size : 0;
  if (m == MemType::Out)
    drv_.store_2d(sram, dram, y, x, stride);
  else
    drv_.load_2d(m, sram, dram, y, x, stride, 0, 0, 0, 0);
}

void RandomStream::load_body(MemType m, int region, int entry_bytes, int64_t depth) {
  if (wide() && chance(0.25)) return empty_transfer(m);
  uint32_t y = 1 + r(uint32_t(c_.max_rows)), x = 1 + r(uint32_t(c_.max_cols));
  uint32_t stride = x + r(3);
  // A shape whose rows would run past the image's entries shrinks instead.
  while ((y - 1) * stride + x > uint32_t(kEntries)) y > 1 ? --y : --x;
  const uint32_t p = uint32_t(c_.max_pad) + 1;
  uint32_t pads[4] = {r(p), r(p), r(p), r(p)};
  auto written = [&] { return int64_t(y + pads[0] + pads[1]) * (x + pads[2] + pads[3]); };
  // A padded tile larger than the buffer (wide pads on a small buffer) loses padding, then rows.
  while (written() > depth) {
    uint32_t* widest = std::max_element(pads, pads + 4);
    if (*widest)
      --*widest;
    else
      y > 1 ? --y : --x;
  }
  uint32_t sram = r(uint32_t(std::clamp<int64_t>(depth - written() + 1, 1, 16)));
  if (wide()) sram = r(uint32_t(depth - written() + 1));
  widen_stride(y, x, stride);
  const uint32_t start = r(kEntries - (y - 1) * stride - x + 1);
  drv_.load_2d(m, sram, image_.addr + region_[region] + uint64_t(start) * uint64_t(entry_bytes), y, x, stride, pads[0],
               pads[1], pads[2], pads[3]);
}

void RandomStream::gemm() {
  go(Module::Compute);
  emitted_compute_ = true;
  auto k = UopKernelBuilder()
               .loop(1 + r(3), r(3), r(3), r(3))
               .loop(1 + r(3), r(2), r(2), r(2))
               .push(r(8), r(8), r(8))
               .push(r(8), r(8), r(8))
               .build();
  widen_factors(k);
  widen_uops(k, true);
  drv_.gemm(k, chance(c_.gemm_reset));
}

void RandomStream::alu() {
  go(Module::Compute);
  emitted_compute_ = true;
  alu_body();
}

void RandomStream::alu_body() {
  AluOp op = AluOp(r(7));
  int32_t v = op == AluOp::Shr ? int32_t(r(20)) - 6 : int32_t(r(200)) - 100;
  bool imm = chance(c_.alu_immediate);  // drawn first, as the call this replaced evaluated it (GCC)
  if (op == AluOp::Clip) {              // bounds from the immediate only: [lo, lo + width] within a signed byte
    imm = true;
    const int lo = int(r(200)) - 100;
    const int hi = chance(0.25) ? lo : std::min(127, lo + int(r(120)));  // one value in four draws
    v = clip_imm(lo, hi);
    // Every other one a SHRSAT, from the same draws (the streams of other seeds stay as they were):
    // the shift, width and sign from the bounds.
    if (lo & 1) v = ShrSatImm{(hi - lo) % 32, 1 + std::abs(lo) / 2 % 16, hi % 3 == 0}.encode(), op = AluOp::ShrSat;
  }
  UopKernel k = UopKernelBuilder().loop(1 + r(4), r(3), r(3)).push(r(8), r(8)).build();
  widen_factors(k);
  for (UopKernel::Loop& l : k.loops) l.wgt_factor = 0;  // the ALU format has no weight factor
  widen_uops(k, false);
  drv_.alu(k, op, imm, v);
}

void RandomStream::burst() {
  const uint32_t n = 2 + r(39);
  uint32_t variant = r(5);
  // Stores that overlap compute read the upper half of the output buffer, which no ALU operation or
  // GEMM of a random program writes (their micro-ops index its first 16 or so entries); a buffer
  // too small for that takes a run of stores instead.
  const uint32_t untouched = uint32_t(cfg_.out_depth() / 2);
  if ((variant == 3 || variant == 4) && cfg_.out_depth() < 128) variant = 0;
  auto load_input_or_weight = [&] {
    if (chance(0.5))
      load_body(MemType::Inp, 0, cfg_.inp_block_bytes(), cfg_.inp_depth());
    else
      load_body(MemType::Wgt, 1, cfg_.wgt_block_bytes(), cfg_.wgt_depth());
  };
  auto alu = [&] { alu_body(); };
  auto upper_store = [&] { drawn_store(untouched); };
  switch (variant) {
    case 0:  // a run of stores: the store queue fills
      go(Module::Store);
      for (uint32_t k = 0; k < n; ++k) drawn_store(0);
      return;
    case 1:  // compute runs ahead of load: ALU operations, each freeing a later LOAD
      return overlap(Module::Compute, Module::Load, n, alu, load_input_or_weight);
    case 2:  // load runs ahead of compute: LOADs whose tokens ALU operations take later
      return overlap(Module::Load, Module::Compute, n, load_input_or_weight, alu);
    case 3:  // compute runs ahead of store: ALU operations, each freeing a later STORE
      return overlap(Module::Compute, Module::Store, n, alu, upper_store);
    default:  // store runs ahead of compute: STOREs whose tokens ALU operations take later
      return overlap(Module::Store, Module::Compute, n, upper_store, alu);
  }
}

void RandomStream::overlap(Module producer, Module consumer, uint32_t n, const std::function<void()>& produce,
                           const std::function<void()>& consume) {
  go(producer);
  for (uint32_t k = 0; k < n; ++k) {
    produce();
    drv_.dep_push(producer, consumer);
  }
  for (uint32_t k = 0; k < n; ++k) {
    drv_.dep_pop(producer, consumer);
    consume();
  }
  last_ = consumer;
  emitted_compute_ = consumer == Module::Compute;
}

// The draws in a fixed order (a function's arguments are evaluated in an order C++ leaves open).
void RandomStream::drawn_store(uint32_t base) {
  if (wide() && chance(0.25)) return empty_transfer(MemType::Out);
  const uint32_t x = 1 + r(8);
  // as many rows as fit the output image with the widest stride store_body draws (x + 2)
  const uint32_t y = std::min(1 + r(uint32_t(c_.max_store_rows)), 1 + (uint32_t(kEntries) - x) / (x + 2));
  uint32_t sram = base + r(16);
  if (wide()) sram = base + r(uint32_t(cfg_.out_depth() - base - int64_t(y) * x + 1));  // anywhere it fits
  store_body(sram, y, x);
}

void RandomStream::store_body(uint32_t sram, uint32_t y, uint32_t x) {
  uint32_t stride = y > 1 ? x + r(3) : x;
  widen_stride(y, x, stride);
  // One store in eight ends at the image's end, the last byte of its allocation (a bin of its own).
  const uint32_t room = kEntries - (y - 1) * stride - x + 1;
  const uint32_t entry = chance(0.125) ? room - 1 : r(room);
  drv_.store_2d(sram, image_.addr + region_[3] + uint64_t(entry) * uint64_t(cfg_.out_block_bytes()), y, x, stride);
}

Program random_program(AccelDevice& device, const AccelConfig& config, const ProgramConstraints& constraints,
                       uint64_t seed) {
  constraints.validate("program constraints");
  RecordingDevice rec(device);
  Program p;
  p.config = config;
  Driver drv(rec, config);
  RandomStream(drv, config, constraints, seed).build();
  std::tie(p.insn_addr, p.insn_count) = drv.finalize_stream();
  p.segments = rec.capture();
  return p;
}

}  // namespace loom::accel
