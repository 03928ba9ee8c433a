// The ISA's functional coverage model (isa_coverage.h): each bin a predicate over one decoded
// instruction. Field classes follow what the hardware treats differently: a size of one or more,
// padding on each side, a stride past the row, loops of one or more iterations, each ALU operation
// with an immediate or a vector operand and the immediate's sign, each dependency flag a module
// can carry.
#include "loom/accel/isa_coverage.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "loom/runtime/error.h"
#include "strict_json.h"

namespace loom::accel {

namespace {

// Where a stream's transfers land: what the DMA bins read besides the instruction.
struct DmaView {
  const AccelConfig* config = nullptr;
  const std::vector<Program::Segment>* segments = nullptr;
};

struct BinDef {
  CoverageBin bin;
  std::function<bool(const Instruction&)> hit;                  // an instruction bin
  std::function<bool(const Instruction&, const DmaView&)> dma;  // or a DMA bin (sampled with a program)
};

constexpr uint64_t kPage = 4096;  // AXI4 bursts may not cross it: the RTL splits them there

// Calls `row(start, end)` with the byte range of each DRAM row a LOAD (not of micro-ops) or STORE
// moves; false for other instructions.
bool for_each_row(const Instruction& i, const AccelConfig& c, const std::function<void(uint64_t, uint64_t)>& row) {
  if (!((i.opcode == Opcode::Load && i.mem != MemType::Uop) || i.opcode == Opcode::Store)) return false;
  const uint64_t eb = uint64_t(entry_bytes(c, i.opcode == Opcode::Store ? MemType::Out : i.mem));
  for (uint32_t r = 0; r < i.y_size; ++r) {
    const uint64_t start = (uint64_t(i.dram_base) + uint64_t(r) * i.x_stride) * eb;
    row(start, start + uint64_t(i.x_size) * eb);
  }
  return true;
}

bool is_load(const Instruction& i, MemType m) { return i.opcode == Opcode::Load && i.mem == m; }

// The bins of a 2-D LOAD of memory type `m`.
void load_bins(std::vector<BinDef>& out, MemType m) {
  const std::string g = std::string("load ") + to_string(m);
  auto add = [&](const std::string& name, std::function<bool(const Instruction&)> f) {
    out.push_back({{g, name}, [m, f](const Instruction& i) { return is_load(i, m) && f(i); }});
  };
  add("any", [](const Instruction&) { return true; });
  add("x = 1", [](const Instruction& i) { return i.x_size == 1; });
  add("x > 1", [](const Instruction& i) { return i.x_size > 1; });
  add("sram base > 0", [](const Instruction& i) { return i.sram_base > 0; });
  // Micro-op loads are one contiguous block of a kernel's micro-ops (the driver's and the
  // compiler's): no rows, strides or padding.
  if (m == MemType::Uop) return;
  add("y = 1", [](const Instruction& i) { return i.y_size == 1; });
  add("y > 1", [](const Instruction& i) { return i.y_size > 1; });
  add("stride > x", [](const Instruction& i) { return i.y_size > 1 && i.x_stride > i.x_size; });
  add("pad y0 > 0", [](const Instruction& i) { return i.y_pad0 > 0; });
  add("pad y1 > 0", [](const Instruction& i) { return i.y_pad1 > 0; });
  add("pad x0 > 0", [](const Instruction& i) { return i.x_pad0 > 0; });
  add("pad x1 > 0", [](const Instruction& i) { return i.x_pad1 > 0; });
  add("no padding", [](const Instruction& i) { return !(i.y_pad0 || i.y_pad1 || i.x_pad0 || i.x_pad1); });
}

std::vector<BinDef> make_bins() {
  std::vector<BinDef> b;
  for (MemType m : {MemType::Inp, MemType::Wgt, MemType::Acc, MemType::Uop}) load_bins(b, m);
  auto add = [&](const std::string& g, const std::string& name, std::function<bool(const Instruction&)> f) {
    b.push_back({{g, name}, std::move(f)});
  };
  auto gemm = [](std::function<bool(const Instruction&)> f) {
    return [f](const Instruction& i) { return i.opcode == Opcode::Gemm && f(i); };
  };
  add("gemm", "reset", gemm([](const Instruction& i) { return i.reset; }));
  add("gemm", "accumulate", gemm([](const Instruction& i) { return !i.reset; }));
  add("gemm", "outer loop > 1", gemm([](const Instruction& i) { return i.iter_out > 1; }));
  add("gemm", "inner loop > 1", gemm([](const Instruction& i) { return i.iter_in > 1; }));
  add("gemm", "several micro-ops", gemm([](const Instruction& i) { return i.uop_end - i.uop_begin > 1; }));
  add("gemm", "input factor > 0", gemm([](const Instruction& i) { return i.src_factor_out || i.src_factor_in; }));
  add("gemm", "weight factor > 0", gemm([](const Instruction& i) { return i.wgt_factor_out || i.wgt_factor_in; }));
  for (AluOp op : {AluOp::Min, AluOp::Max, AluOp::Add, AluOp::Shr, AluOp::Mul, AluOp::Mov, AluOp::Clip, AluOp::ShrSat})
    for (bool imm : {true, false})
      if (imm || (op != AluOp::Clip && op != AluOp::ShrSat))  // CLIP and SHRSAT take an immediate only
        add("alu", std::string(to_string(op)) + (imm ? " immediate" : " vector"),
            [op, imm](const Instruction& i) { return i.opcode == Opcode::Alu && i.alu_op == op && i.use_imm == imm; });
  auto alu_imm = [](std::function<bool(const Instruction&)> f) {
    return [f](const Instruction& i) { return i.opcode == Opcode::Alu && i.use_imm && f(i); };
  };
  add("alu", "immediate < 0", alu_imm([](const Instruction& i) { return i.imm < 0; }));
  add("alu", "immediate = 0", alu_imm([](const Instruction& i) { return i.imm == 0; }));
  add("alu", "immediate > 0", alu_imm([](const Instruction& i) { return i.imm > 0; }));
  add("alu", "shift left (shr < 0)", alu_imm([](const Instruction& i) { return i.alu_op == AluOp::Shr && i.imm < 0; }));
  add("alu", "clip to one value (lo = hi)",
      alu_imm([](const Instruction& i) { return i.alu_op == AluOp::Clip && clip_lo(i.imm) == clip_hi(i.imm); }));
  auto shr_sat = [alu_imm](std::function<bool(const ShrSatImm&)> f) {
    return alu_imm([f](const Instruction& i) { return i.alu_op == AluOp::ShrSat && f(ShrSatImm::decode(i.imm)); });
  };
  add("alu", "shrsat to a non-negative range", shr_sat([](const ShrSatImm& f) { return f.non_negative; }));
  add("alu", "shrsat by 0", shr_sat([](const ShrSatImm& f) { return f.shift == 0; }));
  add("alu", "shrsat to 1 bit", shr_sat([](const ShrSatImm& f) { return f.width == 1; }));
  add("alu", "loops > 1",
      [](const Instruction& i) { return i.opcode == Opcode::Alu && (i.iter_out > 1 || i.iter_in > 1); });
  auto store = [](std::function<bool(const Instruction&)> f) {
    return [f](const Instruction& i) { return i.opcode == Opcode::Store && f(i); };
  };
  add("store", "any", store([](const Instruction&) { return true; }));
  add("store", "x = 1", store([](const Instruction& i) { return i.x_size == 1; }));
  add("store", "x > 1", store([](const Instruction& i) { return i.x_size > 1; }));
  add("store", "y > 1", store([](const Instruction& i) { return i.y_size > 1; }));
  add("store", "stride > x", store([](const Instruction& i) { return i.y_size > 1 && i.x_stride > i.x_size; }));
  add("store", "sram base > 0", store([](const Instruction& i) { return i.sram_base > 0; }));
  // The dependency flags each module can carry (check_instruction refuses the others).
  for (Module mod : {Module::Load, Module::Compute, Module::Store}) {
    const std::string g = std::string("deps ") + to_string(mod);
    auto of = [mod](std::function<bool(const DepFlags&)> f) {
      return [mod, f](const Instruction& i) { return i.opcode != Opcode::Finish && i.module() == mod && f(i.dep); };
    };
    if (mod != Module::Load) {
      add(g, "pop prev", of([](const DepFlags& d) { return d.pop_prev; }));
      add(g, "push prev", of([](const DepFlags& d) { return d.push_prev; }));
    }
    if (mod != Module::Store) {
      add(g, "pop next", of([](const DepFlags& d) { return d.pop_next; }));
      add(g, "push next", of([](const DepFlags& d) { return d.push_next; }));
    }
    add(g, "pop and push",
        of([](const DepFlags& d) { return (d.pop_prev || d.pop_next) && (d.push_prev || d.push_next); }));
  }
  add("finish", "finish", [](const Instruction& i) { return i.opcode == Opcode::Finish; });
  // DMA: rows across a 4 KiB page (split into two bursts), and a transfer that ends exactly at its
  // segment's end (the last byte of an allocation).
  for (const char* kind : {"load inp", "load wgt", "load acc", "store"}) {
    const std::string k = kind;
    auto is_kind = [k](const Instruction& i) {
      return k == "store" ? i.opcode == Opcode::Store
                          : i.opcode == Opcode::Load && "load " + std::string(to_string(i.mem)) == k;
    };
    b.push_back({{"dma", k + ": a row crosses 4 KiB"}, nullptr, [is_kind](const Instruction& i, const DmaView& v) {
                   bool crosses = false;
                   return is_kind(i) &&
                          for_each_row(
                              i, *v.config,
                              [&](uint64_t s, uint64_t e) { crosses |= e > s && s / kPage != (e - 1) / kPage; }) &&
                          crosses;
                 }});
  }
  b.push_back({{"dma", "a transfer ends at its segment's end"}, nullptr, [](const Instruction& i, const DmaView& v) {
                 bool at_end = false;
                 return for_each_row(i, *v.config,
                                     [&](uint64_t s, uint64_t e) {
                                       for (const Program::Segment& seg : *v.segments)
                                         at_end |= s >= seg.addr && e == seg.addr + seg.data.size();
                                     }) &&
                        at_end;
               }});
  return b;
}

const std::vector<BinDef>& defs() {
  static const std::vector<BinDef> d = make_bins();
  return d;
}

}  // namespace

const std::vector<CoverageBin>& isa_coverage_bins() {
  static const std::vector<CoverageBin> bins = [] {
    std::vector<CoverageBin> out;
    for (const BinDef& d : defs()) out.push_back(d.bin);
    return out;
  }();
  return bins;
}

IsaCoverage::IsaCoverage() : hits_(defs().size(), 0) {}

void IsaCoverage::sample(const std::vector<Instruction>& stream) {
  const auto& d = defs();
  for (const Instruction& insn : stream)
    for (size_t k = 0; k < d.size(); ++k) hits_[k] += d[k].hit && d[k].hit(insn);
}

void IsaCoverage::sample(const Program& p) {
  const std::vector<Instruction> stream = p.instructions();
  sample(stream);
  const DmaView view{&p.config, &p.segments};
  const auto& d = defs();
  for (const Instruction& insn : stream)
    for (size_t k = 0; k < d.size(); ++k) hits_[k] += d[k].dma && d[k].dma(insn, view);
}

void IsaCoverage::merge(const IsaCoverage& other) {
  for (size_t k = 0; k < hits_.size(); ++k) hits_[k] += other.hits_[k];
}

void IsaCoverage::add(const std::string& id, uint64_t hits, const std::string& origin) {
  for (size_t k = 0; k < hits_.size(); ++k)
    if (isa_coverage_bins()[k].id() == id) {
      hits_[k] += hits;
      return;
    }
  LOOM_THROW(ConfigError, origin, ": '", id, "' is not a bin of this coverage model");
}

size_t IsaCoverage::bins_hit() const {
  size_t n = 0;
  for (uint64_t h : hits_) n += h > 0;
  return n;
}

std::vector<CoverageBin> IsaCoverage::holes() const {
  std::vector<CoverageBin> out;
  for (size_t k = 0; k < hits_.size(); ++k)
    if (!hits_[k]) out.push_back(isa_coverage_bins()[k]);
  return out;
}

std::string IsaCoverage::to_json() const {
  nlohmann::json bins = nlohmann::json::array();
  for (size_t k = 0; k < hits_.size(); ++k)
    bins.push_back(
        {{"group", isa_coverage_bins()[k].group}, {"name", isa_coverage_bins()[k].name}, {"hits", hits_[k]}});
  return nlohmann::json{{"bins", bins}, {"hit", bins_hit()}, {"total", hits_.size()}}.dump(1);
}

IsaCoverage IsaCoverage::parse(const std::string& text, const std::string& origin) {
  nlohmann::json j = parse_strict_json(text, origin);
  if (!j.is_object() || !j.contains("bins") || !j["bins"].is_array())
    LOOM_THROW(ConfigError, origin, ": not ISA coverage (an object with a 'bins' array)");
  std::map<std::string, size_t> index;
  for (size_t k = 0; k < isa_coverage_bins().size(); ++k) index[isa_coverage_bins()[k].id()] = k;
  IsaCoverage c;
  std::vector<bool> seen(c.hits_.size(), false);
  size_t n = 0;
  for (const auto& b : j["bins"]) {
    const std::string where = origin + ": bin " + std::to_string(n++);
    if (!b.is_object() || !b.contains("group") || !b["group"].is_string() || !b.contains("name") ||
        !b["name"].is_string() || !b.contains("hits") || !b["hits"].is_number_unsigned())
      LOOM_THROW(ConfigError, where, ": each bin is {\"group\": text, \"name\": text, \"hits\": a count}");
    const std::string id = b["group"].get<std::string>() + ": " + b["name"].get<std::string>();
    auto it = index.find(id);
    if (it == index.end())
      LOOM_THROW(ConfigError, where, ": '", id, "' is not a bin of this coverage model (written by another Loom?)");
    if (seen[it->second]) LOOM_THROW(ConfigError, where, ": '", id, "' is given twice");
    seen[it->second] = true;
    c.hits_[it->second] = b["hits"].get<uint64_t>();
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k])
      LOOM_THROW(ConfigError, origin, ": bin '", isa_coverage_bins()[k].id(),
                 "' is missing (written by another Loom's coverage model?)");
  return c;
}

IsaCoverage IsaCoverage::load(const std::string& path) {
  return parse(read_data_file(path, "cannot read the coverage file '" + path + "'"), "'" + path + "'");
}

std::string IsaCoverage::report() const {
  std::ostringstream os;
  std::map<std::string, std::pair<size_t, size_t>> groups;  // hit, total
  std::vector<std::string> order;
  for (size_t k = 0; k < hits_.size(); ++k) {
    const std::string& g = isa_coverage_bins()[k].group;
    if (!groups.count(g)) order.push_back(g);
    groups[g].first += hits_[k] > 0;
    ++groups[g].second;
  }
  os << "ISA coverage: " << bins_hit() << " of " << hits_.size() << " bins\n";
  for (const std::string& g : order) os << "  " << g << ": " << groups[g].first << "/" << groups[g].second << "\n";
  for (const CoverageBin& b : holes()) os << "  hole: " << b.id() << "\n";
  return os.str();
}

ProgramConstraints toward_holes(const ProgramConstraints& base, const IsaCoverage& seen, double boost) {
  ProgramConstraints c = base;
  // Each kind's bins: its group's, and the DMA bins that name it.
  const std::pair<const char*, double*> kinds[] = {{"load inp", &c.load_inp}, {"load wgt", &c.load_wgt},
                                                   {"load acc", &c.load_acc}, {"gemm", &c.gemm},
                                                   {"alu", &c.alu},           {"store", &c.store}};
  const auto& bins = isa_coverage_bins();
  double largest = 0;
  for (auto [kind, weight] : kinds) largest = std::max(largest, *weight);
  // Dependency flags come from switching modules: a load or store between compute instructions
  // (a compute instruction that both pops and pushes is a single one between two switches).
  auto deps_of = [](const std::string& kind) -> std::vector<std::string> {
    if (kind == "load inp" || kind == "load wgt") return {"deps load", "deps compute"};
    if (kind == "store") return {"deps store", "deps compute"};
    return {};
  };
  for (auto [kind, weight] : kinds) {
    size_t total = 0, holes = 0;
    const std::vector<std::string> deps = deps_of(kind);
    for (size_t k = 0; k < bins.size(); ++k) {
      const bool mine = bins[k].group == kind || (bins[k].group == "dma" && bins[k].name.rfind(kind, 0) == 0) ||
                        std::find(deps.begin(), deps.end(), bins[k].group) != deps.end();
      total += mine;
      holes += mine && !seen.hits()[k];
    }
    // Raised toward the largest weight by its share of holes (times `boost`): a kind whose bins
    // are all hit keeps its weight, one with many holes is drawn as often as the most likely kind.
    if (total && *weight > 0)
      *weight = std::max(*weight, largest * std::min(1.0, boost * double(holes) / double(total)));
  }
  return c;
}

}  // namespace loom::accel
