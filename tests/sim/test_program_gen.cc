// Constrained-random programs (accel/program_gen.h): the same seed gives the same program; every
// program runs to FINISH on the backend under test and leaves, instruction by instruction, the same
// commit records as the functional simulator (with DRAM stalls on the RTL and the SystemC
// platform); the constraints steer what is drawn, and bad constraints are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <set>

#include "accel/accel_harness.h"
#include "common/error_text.h"
#include "loom/accel/control_exercise.h"
#include "loom/accel/isa_coverage.h"
#include "loom/accel/program_faults.h"
#include "loom/accel/program_gen.h"
#include "loom/sim/commit_log.h"
#include "loom/sim/functional_sim.h"

namespace loom::accel {
namespace {

Program program_for(const AccelConfig& cfg, const ProgramConstraints& c, uint64_t seed) {
  sim::FunctionalSim scratch(cfg);  // holds the image while the program is built
  return random_program(scratch, cfg, c, seed);
}

std::vector<sim::CommitRecord> commits(AccelDevice& dev, const Program& p) {
  std::string error;
  auto records = sim::run_recorded(
      &dev, test::test_backend(), [&] { run_program(p, dev); }, error);
  EXPECT_EQ(error, "");
  return records;
}

// Runs `p` on the functional simulator and on the backend under test: the first instruction whose
// commit records differ fails the test. Returns how many records the simulator left.
size_t expect_commits_as_fsim(const AccelConfig& cfg, const Program& p) {
  sim::FunctionalSim fsim(cfg);
  auto dev = test::make_test_device(cfg);
  auto want = commits(fsim, p), got = commits(*dev, p);
  auto d = sim::first_divergence(want, got);
  EXPECT_FALSE(d) << "instruction " << (d ? d->index : 0) << "\n" << disassemble(p.instructions());
  return want.size();
}

TEST(ProgramGen, RandomProgramsCommitAsTheFunctionalSimulatorDoes) {
  for (const AccelConfig& cfg : test::test_configs()) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE(cfg.name + " seed " + std::to_string(seed));
      ProgramConstraints c;
      c.length = 80;
      c.max_pad = 2;
      Program p = program_for(cfg, c, seed);
      EXPECT_GT(expect_commits_as_fsim(cfg, p), 80u);
    }
  }
}

// The widest shapes and pads the constraints allow: a padded tile that would not fit a buffer
// (the default config's weights hold 1024 entries; 46 x 46 would be written) loses padding instead
// of making an illegal program.
TEST(ProgramGen, TheWidestConstraintsStillMakeLegalPrograms) {
  for (const AccelConfig& cfg : test::test_configs()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(cfg.name + " seed " + std::to_string(seed));
      ProgramConstraints c;
      c.length = 120;
      c.max_pad = 15;
      c.max_rows = 16;
      c.max_cols = 16;
      c.max_store_rows = 16;
      Program p = program_for(cfg, c, seed);
      expect_commits_as_fsim(cfg, p);
      uint32_t tallest_store = 0;
      for (const Instruction& i : p.instructions())
        if (i.opcode == Opcode::Store) tallest_store = std::max(tallest_store, uint32_t(i.y_size));
      EXPECT_GT(tallest_store, 2u) << "max_store_rows 16 drew no STORE of more than two rows";
    }
  }
}

// Wide fields: free fields drawn from their whole range (one-row strides, one-iteration loops'
// factors, scratchpad bases anywhere) still make legal programs that commit as fsim, and the
// instruction words carry values the narrow draws never give.
TEST(ProgramGen, WideFieldsStayLegalAndReachTheUpperBits) {
  const AccelConfig cfg = default_config();
  uint32_t widest_stride = 0, widest_factor = 0, highest_base = 0, highest_uop_dst = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ProgramConstraints c;
    c.length = 120;
    c.wide_fields = 0.5;
    Program p = program_for(cfg, c, seed);
    expect_commits_as_fsim(cfg, p);
    for (const Instruction& i : p.instructions()) {
      if (i.opcode == Opcode::Load || i.opcode == Opcode::Store) {
        widest_stride = std::max(widest_stride, i.x_stride);
        highest_base = std::max(highest_base, i.sram_base);
      }
      if (i.opcode == Opcode::Gemm || i.opcode == Opcode::Alu)
        widest_factor = std::max({widest_factor, i.dst_factor_out, i.dst_factor_in, i.src_factor_out, i.src_factor_in});
      if (i.opcode == Opcode::Load && i.mem == MemType::Uop)  // the micro-ops it loads
        for (const Program::Segment& seg : p.segments)
          for (uint32_t e = 0; e < i.x_size; ++e) {
            const uint64_t addr = (uint64_t(i.dram_base) + e) * uint64_t(entry_bytes(cfg, MemType::Uop));
            if (addr < seg.addr || addr + 4 > seg.addr + seg.data.size()) continue;
            uint32_t word;
            std::memcpy(&word, seg.data.data() + (addr - seg.addr), 4);
            highest_uop_dst = std::max(highest_uop_dst, decode_uop(word, cfg).dst);
          }
    }
  }
  EXPECT_GT(highest_uop_dst, 64u);     // narrow draws: 7 plus the loops' offsets
  EXPECT_GT(widest_stride, 1u << 12);  // narrow draws: x + 2 at most, x <= 16
  EXPECT_GT(widest_factor, 1u << 6);   // narrow draws: 2 at most
  EXPECT_GT(highest_base, 64u);        // narrow draws: 15 at most
}

// Bursts: runs of loads whose tokens the compute module takes later (load and compute overlap)
// and runs of stores; still race-free, so every backend commits as the functional simulator.
TEST(ProgramGen, BurstsOverlapTheModulesWithoutRaces) {
  for (const AccelConfig& cfg : test::test_configs()) {
    size_t longest_loads = 0, longest_computes = 0;  // over the seeds: a burst's variant is drawn
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(cfg.name + " seed " + std::to_string(seed));
      ProgramConstraints c;
      c.length = 60;
      c.burst = 2;
      Program p = program_for(cfg, c, seed);
      expect_commits_as_fsim(cfg, p);
      // Runs of loads that each push a token to compute, and of compute instructions that each
      // push one to load, the pops coming later.
      size_t loads = 0, computes = 0;
      for (const Instruction& i : p.instructions()) {
        if (i.module() == Module::Load && i.dep.push_next) longest_loads = std::max(longest_loads, ++loads);
        if (i.module() == Module::Compute) loads = 0;
        if (i.module() == Module::Compute && i.dep.push_prev) longest_computes = std::max(longest_computes, ++computes);
        if (i.module() == Module::Load) computes = 0;
      }
    }
    EXPECT_GE(longest_loads, 2u) << cfg.name;
    EXPECT_GE(longest_computes, 2u) << cfg.name;
  }
}

// A planted fault: the backend under test stops at the instruction the functional simulator stops
// at (which names no fault code: its message says it), for every kind of fault (seeds cycle
// through them at random: 100 seeds draw each); the RTL and SystemC also name the fault the kind plants.
RunStop stop_of(AccelDevice& dev, const Program& p, std::string* message = nullptr) {
  try {
    run_program(p, dev);
  } catch (const DeviceError& e) {
    if (message) *message = e.what();
  }
  return run_stop(dev);
}

TEST(ProgramGen, PlantedFaultsStopEveryBackendAsTheFunctionalSimulator) {
  const AccelConfig cfg = default_config();
  std::set<std::string> kinds;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    ProgramConstraints c;
    c.length = 40;
    Program p = program_for(cfg, c, seed);
    const auto planted = plant_fault(p, seed);
    ASSERT_TRUE(planted);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + planted->what);
    const std::string kind = planted->what.substr(0, planted->what.find(' ', planted->what.find(' ') + 1));
    kinds.insert(kind);
    sim::FunctionalSim fsim(cfg);
    auto dev = test::make_test_device(cfg);
    std::string fsim_says;
    const RunStop want = stop_of(fsim, p, &fsim_says), got = stop_of(*dev, p);
    if (kind == "unaligned stream")  // fsim names no fault code: its message says why
      EXPECT_NE(fsim_says.find("16-byte aligned"), std::string::npos) << fsim_says;
    EXPECT_TRUE(want.error);
    EXPECT_TRUE(got.error);
    EXPECT_EQ(got.index, want.index);
    EXPECT_TRUE(got.agrees(want)) << got.describe() << "; fsim: " << want.describe();
    if (kind != "its dependency") EXPECT_EQ(want.index, planted->index);  // a deadlock names the waiting one
    if (test::test_backend() != "fsim") {                                 // the hardware names the fault
      const std::map<std::string, AccelFault> named = {
          {"illegal opcode", AccelFault::IllegalOpcode},   {"reserved bits", AccelFault::ReservedBits},
          {"illegal ALU", AccelFault::IllegalAluOp},       {"illegal memory", AccelFault::IllegalMemType},
          {"memory type", AccelFault::IllegalMemType},     {"dependency flag", AccelFault::IllegalDeps},
          {"malformed transfer", AccelFault::BadDmaShape}, {"shift by", AccelFault::BadUopRange},
          {"scratchpad base", AccelFault::SramOverflow},   {"micro-op range", AccelFault::BadUopRange},
          {"DRAM address", AccelFault::DmaFault},          {"its dependency", AccelFault::Deadlock},
          {"unaligned stream", AccelFault::FetchFault},    {"stream outside", AccelFault::FetchFault},
          {"stream without", AccelFault::NoFinish},        {"index past", AccelFault::IndexOutOfRange}};
      if (named.count(kind)) EXPECT_EQ(to_string(got.fault), std::string(to_string(named.at(kind))));
    }
  }
  EXPECT_EQ(kinds.size(), 16u) << ::testing::PrintToString(kinds);  // every kind was planted
}

// The control registers around a run (accel/control_exercise.h): the backend under test answers
// every access as the functional simulator does: CONTROL without START changes nothing, GIE/IER masked, ISR toggled and
// raised by the run's end, a read-only register and an unknown offset refused, DONE and READY cleared by the first
// CONTROL read; and where a run takes time (the RTL, SystemC), START written during it is refused and the run still
// commits as the simulator's.
TEST(ControlExercise, TheBackendAnswersTheControlRegistersAsTheFunctionalSimulator) {
  const AccelConfig cfg = default_config();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ProgramConstraints c;
    c.length = 30;
    const Program p = program_for(cfg, c, seed);
    sim::FunctionalSim fsim(cfg);
    auto dev = test::make_test_device(cfg);
    ControlTrace want, got;
    run_with_control_exercise(p, fsim, seed, want);
    const ProgramResult r = run_with_control_exercise(p, *dev, seed, got);
    EXPECT_EQ(r.mismatched_checks, 0u) << r.report;
    EXPECT_EQ(first_difference(want, got), std::nullopt);
    ASSERT_EQ(want.size(), 16u);
    EXPECT_EQ(want[0], "CONTROL reads 0x4");  // idle
    auto ends_with = [](const std::string& s, const std::string& end) {
      return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
    };
    EXPECT_TRUE(ends_with(want[1], " reads 0x4")) << want[1];  // CONTROL without START: still idle
    EXPECT_TRUE(ends_with(want[6], " reads 0x0")) << want[6];  // ISR toggled back
    EXPECT_TRUE(ends_with(want[10], " refused")) << want[10];
    EXPECT_TRUE(ends_with(want[11], " refused")) << want[11];
    EXPECT_EQ(want[12], "CONTROL reads 0xe");  // DONE, IDLE, READY
    EXPECT_EQ(want[13], "CONTROL reads 0x4");  // DONE and READY cleared by the read before
    EXPECT_EQ(want[14], "ISR reads 0x3");
  }
  EXPECT_EQ(first_difference({"a", "b"}, {"a", "c"}), "access 2: c; the reference: b");
  EXPECT_EQ(first_difference({"a"}, {"a", "c"}), "access 2: c; the reference: nothing");
}

TEST(ProgramGen, TheSameSeedGivesTheSameProgram) {
  const AccelConfig cfg = default_config();
  ProgramConstraints c;
  Program a = program_for(cfg, c, 7), b = program_for(cfg, c, 7), other = program_for(cfg, c, 8);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (size_t k = 0; k < a.segments.size(); ++k) EXPECT_EQ(a.segments[k].data, b.segments[k].data);
  EXPECT_NE(disassemble(a.instructions()), disassemble(other.instructions()));
}

size_t count(const std::vector<Instruction>& stream, Opcode op) {
  size_t n = 0;
  for (const Instruction& i : stream) n += i.opcode == op;
  return n;
}

TEST(ProgramGen, WeightsSteerWhatIsDrawn) {
  const AccelConfig cfg = default_config();
  ProgramConstraints only_gemm;
  only_gemm.load_inp = only_gemm.load_wgt = only_gemm.load_acc = only_gemm.alu = only_gemm.store = 0;
  only_gemm.length = 50;
  std::vector<Instruction> s = program_for(cfg, only_gemm, 3).instructions();
  EXPECT_EQ(count(s, Opcode::Gemm), 50u);
  EXPECT_EQ(count(s, Opcode::Alu), 0u);
  ProgramConstraints no_gemm;
  no_gemm.gemm = 0;
  no_gemm.alu_immediate = 0;
  s = program_for(cfg, no_gemm, 3).instructions();
  EXPECT_EQ(count(s, Opcode::Gemm), 0u);
  EXPECT_GT(count(s, Opcode::Store), 1u);
  size_t vector_alu = 0;
  for (const Instruction& i : s) vector_alu += i.opcode == Opcode::Alu && !i.use_imm;
  EXPECT_GT(vector_alu, 5u);
  // Every GEMM resets, and loads are padded up to max_pad and no further.
  ProgramConstraints resets;
  resets.gemm_reset = 1;
  resets.max_pad = 3;
  resets.length = 200;
  s = program_for(cfg, resets, 4).instructions();
  uint32_t widest = 0;
  for (const Instruction& i : s) {
    if (i.opcode == Opcode::Gemm) EXPECT_TRUE(i.reset);
    if (i.opcode == Opcode::Load) widest = std::max({widest, i.y_pad0, i.y_pad1, i.x_pad0, i.x_pad1});
  }
  EXPECT_EQ(widest, 3u);
}

// The ISA's functional coverage (accel/isa_coverage.h): a few random programs reach every bin.
TEST(ProgramGen, RandomProgramsReachEveryIsaBin) {
  for (const AccelConfig& cfg : test::test_configs()) {
    SCOPED_TRACE(cfg.name);
    IsaCoverage c;
    ProgramConstraints pc;
    pc.length = 200;
    for (uint64_t seed = 1; seed <= 5; ++seed) c.sample(program_for(cfg, pc, seed));
    EXPECT_EQ(c.bins_hit(), isa_coverage_bins().size()) << c.report();
  }
}

// Coverage-directed generation: from constraints that favour GEMM and ALU, programs drawn toward
// the holes of what the earlier ones hit close the model in fewer programs than undirected ones.
TEST(ProgramGen, GenerationTowardTheHolesClosesCoverageSooner) {
  const AccelConfig cfg = default_config();
  ProgramConstraints base;
  base.length = 30;
  base.gemm = base.alu = 10;
  base.load_inp = base.load_wgt = base.load_acc = base.store = 0.2;
  auto programs_to_close = [&](bool directed) {
    IsaCoverage seen;
    for (int n = 1; n <= 300; ++n) {
      seen.sample(program_for(cfg, directed ? toward_holes(base, seen) : base, uint64_t(n)));
      if (seen.bins_hit() == isa_coverage_bins().size()) return n;
    }
    if (directed) ADD_FAILURE() << "directed generation did not close the model:\n" << seen.report();
    return 301;
  };
  const int undirected = programs_to_close(false), directed = programs_to_close(true);
  EXPECT_LT(directed * 2, undirected) << "directed " << directed << ", undirected " << undirected;
  std::cout << "programs to close the model: directed " << directed << ", undirected " << undirected
            << (undirected > 300 ? " (not within 300)" : "") << "\n";
  // What it changes: the weights of kinds with holes, by their share; a kind left out stays out.
  ProgramConstraints no_store = base;
  no_store.store = 0;
  ProgramConstraints fresh = toward_holes(no_store, IsaCoverage(), 8);
  EXPECT_DOUBLE_EQ(fresh.load_inp, 10);  // every bin a hole: as likely as the most likely kind
  EXPECT_DOUBLE_EQ(fresh.gemm, 10);
  EXPECT_EQ(fresh.store, 0);
  IsaCoverage all;
  for (uint64_t seed = 1; seed <= 5; ++seed) all.sample(program_for(cfg, ProgramConstraints{200}, seed));
  EXPECT_DOUBLE_EQ(toward_holes(base, all).gemm, 10);  // no hole left: as given
}

size_t hits_of(const IsaCoverage& c, const std::string& id) {
  for (size_t k = 0; k < isa_coverage_bins().size(); ++k)
    if (isa_coverage_bins()[k].id() == id) return c.hits()[k];
  ADD_FAILURE() << "no bin '" << id << "'";
  return 0;
}

TEST(IsaCoverage, InstructionsFallInTheirFieldsBins) {
  Instruction load;
  load.opcode = Opcode::Load;
  load.mem = MemType::Acc;
  load.y_size = 2;
  load.x_size = 3;
  load.x_stride = 5;
  load.x_pad1 = 1;
  load.dep.pop_prev = true;
  Instruction shl;
  shl.opcode = Opcode::Alu;
  shl.alu_op = AluOp::Shr;
  shl.use_imm = true;
  shl.imm = -2;
  IsaCoverage c;
  c.sample({load, load, shl});
  EXPECT_EQ(hits_of(c, "load acc: any"), 2u);
  EXPECT_EQ(hits_of(c, "load acc: y > 1"), 2u);
  EXPECT_EQ(hits_of(c, "load acc: stride > x"), 2u);
  EXPECT_EQ(hits_of(c, "load acc: pad x1 > 0"), 2u);
  EXPECT_EQ(hits_of(c, "load acc: pad x0 > 0"), 0u);
  EXPECT_EQ(hits_of(c, "load acc: no padding"), 0u);
  EXPECT_EQ(hits_of(c, "load inp: any"), 0u);
  EXPECT_EQ(hits_of(c, "deps compute: pop prev"), 2u);  // accumulator loads run on compute
  EXPECT_EQ(hits_of(c, "alu: shr immediate"), 1u);
  EXPECT_EQ(hits_of(c, "alu: shift left (shr < 0)"), 1u);
  EXPECT_EQ(hits_of(c, "alu: immediate < 0"), 1u);
  EXPECT_EQ(hits_of(c, "alu: shr vector"), 0u);
  EXPECT_EQ(c.holes().size(), isa_coverage_bins().size() - c.bins_hit());
  // Written, read back and merged: the counts add.
  IsaCoverage twice = IsaCoverage::parse(c.to_json(), "c.json");
  twice.merge(c);
  EXPECT_EQ(hits_of(twice, "load acc: any"), 4u);
  EXPECT_EQ(twice.bins_hit(), c.bins_hit());
}

// The DMA bins from a program built by hand: its rows' byte ranges against the 4 KiB page and its
// segments' ends (default config: 16-byte out entries).
TEST(IsaCoverage, TransfersAcrossAPageAndAtASegmentsEnd) {
  Program p;
  p.config = default_config();
  auto store = [](uint32_t entry, uint32_t x) {
    Instruction i;
    i.opcode = Opcode::Store;
    i.mem = MemType::Out;
    i.dram_base = entry;
    i.y_size = 1;
    i.x_size = i.x_stride = x;
    return i;
  };
  // Out entries 252..255 end at 4096; 254..257 cross it; 264..267 end the data segment at 4288.
  std::vector<Instruction> stream = {store(252, 4), store(254, 4), store(264, 4)};
  Instruction finish;
  stream.push_back(finish);
  p.segments.push_back({4032, 64, std::vector<uint8_t>(256)});
  IsaLayout layout(p.config);
  Program::Segment code{65536, 64, {}};
  for (const Instruction& i : stream) {
    InsnWord w = encode(i, layout);
    const auto* bytes = reinterpret_cast<const uint8_t*>(w.data());
    code.data.insert(code.data.end(), bytes, bytes + 16);
  }
  p.segments.push_back(code);
  p.insn_addr = 65536;
  p.insn_count = uint32_t(stream.size());
  IsaCoverage c;
  c.sample(p);
  EXPECT_EQ(hits_of(c, "dma: store: a row crosses 4 KiB"), 1u);
  EXPECT_EQ(hits_of(c, "dma: a transfer ends at its segment's end"), 1u);
  EXPECT_EQ(hits_of(c, "store: any"), 3u);
  IsaCoverage stream_only;
  stream_only.sample(stream);  // without the program, no DMA bin
  EXPECT_EQ(hits_of(stream_only, "dma: store: a row crosses 4 KiB"), 0u);
}

std::string coverage_error(const std::string& json) {
  return test::error_text<ConfigError>([&] { IsaCoverage::parse(json, "cov.json"); });
}

TEST(IsaCoverage, BadCoverageFilesAreClearErrors) {
  EXPECT_NE(coverage_error("{}").find("cov.json: not ISA coverage"), std::string::npos);
  EXPECT_NE(coverage_error(R"({"bins": [{"group": "gemm", "name": "reset"}]})").find("cov.json: bin 0: each bin is"),
            std::string::npos);
  EXPECT_NE(coverage_error(R"({"bins": [{"group": "gemm", "name": "fused", "hits": 1}]})")
                .find("'gemm: fused' is not a bin of this coverage model"),
            std::string::npos);
  EXPECT_NE(coverage_error(R"({"bins": [{"group": "gemm", "name": "reset", "hits": 1}]})").find("is missing"),
            std::string::npos);
  EXPECT_NE(coverage_error(R"({"bins": [{"group": "gemm", "name": "reset", "hits": 1},)"
                           R"({"group": "gemm", "name": "reset", "hits": 2}]})")
                .find("'gemm: reset' is given twice"),
            std::string::npos);
  EXPECT_NE(coverage_error("not json").find("cov.json: not valid JSON"), std::string::npos);
}

std::string constraint_error(const std::string& json) {
  return test::error_text<ConfigError>([&] { ProgramConstraints::parse(json, "c.json"); });
}

TEST(ProgramGen, BadConstraintsAreClearErrors) {
  EXPECT_EQ(constraint_error(R"({"length": 10, "weights": {"gemm": 2}, "max_pad": 3})"), "<no error>");
  EXPECT_NE(constraint_error(R"({"lenght": 10})").find("c.json: unknown field 'lenght'"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"length": 0})").find("c.json: length is 0, not in [1, 100000]"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"length": 2.5})").find("length is 2.5, not a whole number"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"weights": {"gemm": -1}})").find("weights.gemm is -1"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"weights": {"fma": 1}})").find("weights has no kind 'fma'"), std::string::npos);
  EXPECT_NE(
      constraint_error(R"({"weights": {"load_inp": 0, "load_wgt": 0, "load_acc": 0, "gemm": 0, "alu": 0, "store": 0}})")
          .find("every weight is 0"),
      std::string::npos);
  EXPECT_NE(constraint_error(R"({"max_pad": 1, "max_pad": 2})").find("field 'max_pad' is given twice"),
            std::string::npos);
  EXPECT_NE(constraint_error("[1]").find("the constraints are a JSON object"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"max_pad": 16})").find("max_pad is 16, not in [0, 15]"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"gemm_reset": 1.5})").find("gemm_reset is 1.5, not in [0, 1]"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"wide_fields": -0.5})").find("wide_fields is -0.5, not in [0, 1]"), std::string::npos);
  EXPECT_NE(constraint_error(R"({"max_store_rows": 17})").find("max_store_rows is 17, not in [1, 16]"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::accel
