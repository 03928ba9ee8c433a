// Per-instruction commit records and first divergence: a correct program gives the same records on
// the functional simulator and on the backend this binary tests (rtl, systemc), and a program that
// reads accumulator entries it never wrote (stale on the RTL, zero on fsim) parts the backends at
// exactly that instruction.
#include <gtest/gtest.h>

#include <tuple>

#include "accel/accel_harness.h"
#include "loom/accel/driver.h"
#include "loom/accel/program.h"
#include "loom/sim/backends.h"
#include "loom/sim/commit_log.h"
#include "loom/sim/functional_sim.h"
#include "matmul_run.h"

namespace loom::accel {
namespace {

sim::CommitLogSource& log_of(AccelDevice& d) {
  auto* log = dynamic_cast<sim::CommitLogSource*>(&d);
  if (!log) throw std::runtime_error(d.name() + " records no commits");
  return *log;
}

TEST(CommitLog, ACorrectProgramCommitsTheSameOnBothBackends) {
  for (const AccelConfig& cfg : test::test_configs()) {
    SCOPED_TRACE(cfg.name);
    sim::FunctionalSim fsim(cfg);
    auto dev = test::make_test_device(cfg);
    log_of(fsim).record_commits(true);
    log_of(*dev).record_commits(true);
    std::vector<int8_t> a, b;
    run_matmul(fsim, cfg, &a);
    run_matmul(*dev, cfg, &b);
    ASSERT_EQ(a, b);
    auto ra = log_of(fsim).take_commits(), rb = log_of(*dev).take_commits();
    EXPECT_GT(ra.size(), 10u);
    EXPECT_EQ(ra.size(), rb.size());
    auto d = sim::first_divergence(ra, rb);
    EXPECT_FALSE(d.has_value()) << (d && d->a ? d->a->describe() : "") << " / " << (d && d->b ? d->b->describe() : "");
  }
}

// Program 2 adds an immediate to accumulator entries it never loaded or computed: on fsim they
// start at zero in every run, on the RTL they hold program 1's results.
TEST(CommitLog, AStaleAccumulatorReadIsTheFirstDivergence) {
  const AccelConfig cfg = default_config();
  sim::FunctionalSim fsim(cfg);
  auto dev = test::make_test_device(cfg);
  for (AccelDevice* d : {static_cast<AccelDevice*>(&fsim), dev.get()}) {
    std::vector<int8_t> out;
    run_matmul(*d, cfg, &out);  // leaves results in the accumulator
    log_of(*d).record_commits(true);
  }
  std::vector<sim::CommitRecord> records[2];
  size_t alu_index = 0;
  int side = 0;
  for (AccelDevice* d : {static_cast<AccelDevice*>(&fsim), dev.get()}) {
    Driver drv(*d, cfg);
    auto buf = drv.alloc(uint64_t(16) * cfg.out_block_bytes());
    drv.alu(UopKernelBuilder().loop(4, 1, 1).push(0, 0, 0).build(), AluOp::Add, true, 3);
    alu_index = drv.stream().size() - 1;
    drv.dep_push(Module::Compute, Module::Store);
    drv.dep_pop(Module::Compute, Module::Store);
    drv.store_2d(0, buf.addr, 1, 4, 4);
    drv.synchronize();
    records[side++] = log_of(*d).take_commits();
  }
  auto div = sim::first_divergence(records[0], records[1]);
  ASSERT_TRUE(div.has_value());
  EXPECT_EQ(div->index, alu_index);
  ASSERT_TRUE(div->a && div->b);
  EXPECT_EQ(div->a->opcode, Opcode::Alu);
  EXPECT_NE(div->a->digest, div->b->digest);
  EXPECT_NE(div->a->describe().find("acc and out entries (4 written)"), std::string::npos) << div->a->describe();
}

// A GEMM that does not wait for the load of its inputs (no dependency token): the functional
// simulator runs the ready load first, the RTL runs both modules at once and the GEMM reads the
// scratchpad before the data arrives. The backends part at that GEMM, not at the end.
TEST(CommitLog, AMissingTokenPartsTheBackendsAtTheRacingGemm) {
  const AccelConfig cfg = default_config();
  sim::FunctionalSim fsim(cfg);
  auto dev = test::make_test_device(cfg);
  std::vector<sim::CommitRecord> records[2];
  size_t gemm_index = 0;
  int side = 0;
  for (AccelDevice* d : {static_cast<AccelDevice*>(&fsim), dev.get()}) {
    log_of(*d).record_commits(true);
    Driver drv(*d, cfg);
    std::vector<int8_t> x(size_t(16) * cfg.inp_block_bytes(), 7), w(size_t(cfg.wgt_block_bytes()), 1);
    auto bx = drv.alloc(x.size()), bw = drv.alloc(w.size()), bo = drv.alloc(size_t(16) * cfg.out_block_bytes());
    drv.copy_to_device(bx, x.data(), x.size());
    drv.copy_to_device(bw, w.data(), w.size());
    drv.load_2d(MemType::Wgt, 0, bw.addr, 1, 1, 1);
    drv.load_2d(MemType::Inp, 0, bx.addr, 1, 16, 16);
    drv.gemm(UopKernelBuilder().loop(16, 1, 1).push(0, 0, 0).build(), false);  // no dep_pop: races the loads
    gemm_index = drv.stream().size() - 1;
    drv.dep_push(Module::Compute, Module::Store);
    drv.dep_pop(Module::Compute, Module::Store);
    drv.store_2d(0, bo.addr, 1, 16, 16);
    drv.synchronize();
    records[side++] = log_of(*d).take_commits();
  }
  auto div = sim::first_divergence(records[0], records[1]);
  ASSERT_TRUE(div.has_value());
  EXPECT_EQ(div->index, gemm_index);
  ASSERT_TRUE(div->a && div->b);
  EXPECT_EQ(div->a->opcode, Opcode::Gemm);
}

// A recorded program whose input segment was moved by one byte: its loads start a byte before
// the data. Every backend calls that an error (fsim: the DMA row is outside allocated memory; the
// RTL: its beat-aligned burst is answered DECERR), naming the load.
TEST(CommitLog, AProgramWithItsInputMovedByOneByteIsAnErrorOnEveryBackend) {
  const AccelConfig cfg = default_config();
  sim::FunctionalSim base(cfg);
  RecordingDevice rec(base);
  Driver drv(rec, cfg);
  std::vector<int8_t> x(size_t(16) * cfg.inp_block_bytes(), 3), w(size_t(cfg.wgt_block_bytes()), 1);
  auto bx = drv.alloc(x.size()), spacer = drv.alloc(4096), bw = drv.alloc(w.size()),
       bo = drv.alloc(size_t(16) * cfg.out_block_bytes());
  drv.copy_to_device(bx, x.data(), x.size());
  drv.copy_to_device(bw, w.data(), w.size());
  drv.load_2d(MemType::Wgt, 0, bw.addr, 1, 1, 1);
  drv.load_2d(MemType::Inp, 0, bx.addr, 1, 16, 16);
  drv.dep_push(Module::Load, Module::Compute);
  drv.dep_pop(Module::Load, Module::Compute);
  drv.gemm(UopKernelBuilder().loop(16, 1, 1).push(0, 0, 0).build(), true);
  drv.dep_push(Module::Compute, Module::Store);
  drv.dep_pop(Module::Compute, Module::Store);
  drv.store_2d(0, bo.addr, 1, 16, 16);
  Program p;
  p.config = cfg;
  std::tie(p.insn_addr, p.insn_count) = drv.finalize_stream();
  drv.free(spacer);  // room after the input for the moved segment
  p.segments = rec.capture();
  bool moved = false;
  for (auto& seg : p.segments)
    if (seg.addr == bx.addr) {
      seg.addr += 1;
      seg.alignment = 1;
      moved = true;
    }
  ASSERT_TRUE(moved);
  sim::FunctionalSim fsim(cfg);
  auto dev = test::make_test_device(cfg);
  for (AccelDevice* d : {static_cast<AccelDevice*>(&fsim), dev.get()}) {
    SCOPED_TRACE(d->name());
    try {
      run_program(p, *d);
      ADD_FAILURE() << "ran without an error";
    } catch (const DeviceError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("instruction 1 (LOAD inp"), std::string::npos) << m;
      EXPECT_TRUE(m.find("outside allocated device memory") != std::string::npos ||
                  m.find("outside every allocation") != std::string::npos)
          << m;
    }
  }
}

// The same program over inputs that differ in one byte parts at the LOAD of that input (both runs
// on the backend under test).
TEST(CommitLog, DifferentInputDataPartsAtItsLoad) {
  const AccelConfig cfg = default_config();
  std::vector<sim::CommitRecord> records[2];
  size_t load_index = 0;
  for (int side = 0; side < 2; ++side) {
    auto dev = test::make_test_device(cfg);
    log_of(*dev).record_commits(true);
    Driver drv(*dev, cfg);
    std::vector<int8_t> x(size_t(16) * cfg.inp_block_bytes(), 2), w(size_t(cfg.wgt_block_bytes()), 1);
    x[37] += int8_t(side);
    auto bx = drv.alloc(x.size()), bw = drv.alloc(w.size()), bo = drv.alloc(size_t(16) * cfg.out_block_bytes());
    drv.copy_to_device(bx, x.data(), x.size());
    drv.copy_to_device(bw, w.data(), w.size());
    drv.load_2d(MemType::Wgt, 0, bw.addr, 1, 1, 1);
    drv.load_2d(MemType::Inp, 0, bx.addr, 1, 16, 16);
    load_index = drv.stream().size() - 1;
    drv.dep_push(Module::Load, Module::Compute);
    drv.dep_pop(Module::Load, Module::Compute);
    drv.gemm(UopKernelBuilder().loop(16, 1, 1).push(0, 0, 0).build(), false);
    drv.dep_push(Module::Compute, Module::Store);
    drv.dep_pop(Module::Compute, Module::Store);
    drv.store_2d(0, bo.addr, 1, 16, 16);
    drv.synchronize();
    records[side] = log_of(*dev).take_commits();
  }
  auto div = sim::first_divergence(records[0], records[1]);
  ASSERT_TRUE(div.has_value());
  EXPECT_EQ(div->index, load_index);
  ASSERT_TRUE(div->a.has_value());
  EXPECT_EQ(div->a->target, "inp entries [0, 16)");
}

TEST(CommitLog, FirstDivergenceFindsMissingAndDifferentRecords) {
  auto rec = [](uint32_t k, uint64_t digest) {
    sim::CommitRecord r;
    r.index = k;
    r.opcode = Opcode::Load;
    r.target = "inp entries [0, 1)";
    r.digest = digest;
    return r;
  };
  EXPECT_FALSE(sim::first_divergence({rec(0, 1), rec(2, 5)}, {rec(2, 5), rec(0, 1)}).has_value());
  auto d = sim::first_divergence({rec(0, 1), rec(1, 2), rec(2, 5)}, {rec(0, 1), rec(2, 5)});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->index, 1u);
  EXPECT_TRUE(d->a.has_value());
  EXPECT_FALSE(d->b.has_value());
  d = sim::first_divergence({rec(0, 1), rec(3, 9)}, {rec(0, 1), rec(3, 8)});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->index, 3u);
}

}  // namespace
}  // namespace loom::accel
