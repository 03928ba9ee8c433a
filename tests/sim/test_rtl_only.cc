// What only the cycle-accurate RTL backend has: faults detected by the hardware itself (each
// with the instruction index), the cycle limit, timing counters that respond to the DRAM model,
// counters equal to the functional simulator's, waveform dumps, and the per-config model table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "accel/accel_harness.h"
#include "common/temp_dir.h"
#include "loom/accel/examples.h"
#include "loom/runtime/interrupt.h"
#include "loom/sim/rtl_sim.h"
#include "matmul_run.h"

namespace loom::accel {
using loom::DeviceError;
namespace {

using test::run_words;

Instruction finish() {
  Instruction f;
  f.opcode = Opcode::Finish;
  return f;
}

TEST(RtlFaults, IllegalOpcodeAndReservedBitsAreCaughtByTheDecoder) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  std::string e = run_words(h, {encode(finish(), L), InsnWord{6, 0}, encode(finish(), L)});
  EXPECT_NE(e.find("instruction 1"), std::string::npos) << e;
  EXPECT_NE(e.find("illegal opcode"), std::string::npos) << e;
  // The message shows the word that does not decode and why (not an empty disassembly).
  EXPECT_NE(e.find("instruction 1 (undecodable word 0x00000000000000000000000000000006: "), std::string::npos) << e;
  EXPECT_EQ(h.dev->read_reg(reg::kErrorIndex), 1u);
  EXPECT_EQ((h.dev->read_reg(reg::kStatus) >> reg::kFaultShift) & reg::kFaultMask, uint32_t(AccelFault::IllegalOpcode));
  InsnWord reserved = encode(finish(), L);
  reserved[1] |= uint64_t{1} << 63;
  e = run_words(h, {encode(finish(), L), encode(finish(), L), reserved});
  EXPECT_NE(e.find("instruction 2"), std::string::npos) << e;
  EXPECT_NE(e.find("reserved instruction bits"), std::string::npos) << e;
}

TEST(RtlFaults, OutOfRangeDmaAnswersDecodeErrorAndNamesTheLoad) {
  test::AccelHarness h(default_config());
  auto small = h.drv.alloc(64);
  h.drv.load_2d(MemType::Inp, 0, small.addr, 1, 8, 8);  // 128 bytes from a 64-byte buffer
  h.drv.dep_push(Module::Load, Module::Compute);
  h.drv.dep_pop(Module::Load, Module::Compute);
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 0 (LOAD inp"), std::string::npos) << e;
  EXPECT_NE(e.find("DMA outside allocated device memory"), std::string::npos) << e;
  // The DRAM model recorded the burst it answered with DECERR: address, length and cycle.
  std::ostringstream burst;
  burst << "AXI4 read burst at 0x" << std::hex << small.addr << std::dec << " (8 beats of 16 bytes) at cycle ";
  EXPECT_NE(e.find(burst.str()), std::string::npos) << e;
  EXPECT_NE(e.find("reaches memory outside every allocation: answered DECERR"), std::string::npos) << e;
  // The device was reset after the fault: the next stream runs normally.
  test::AccelHarness ok(default_config());
  EXPECT_NO_THROW(ok.drv.synchronize());
  IsaLayout L(h.cfg);
  EXPECT_EQ(run_words(h, {encode(finish(), L)}), "<no error>");
}

// A LOAD whose padded block, or a STORE whose block, runs past the end of its scratchpad is
// refused before any burst (the DMAs' command check, loom_dma_cmd), naming the instruction.
TEST(RtlFaults, ScratchpadOverflowOfALoadAndOfAStore) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  auto buf = h.drv.alloc(1024);
  Instruction load;
  load.opcode = Opcode::Load;
  load.mem = MemType::Inp;
  load.sram_base = uint32_t(h.cfg.inp_depth() - 2);  // room for two entries
  load.dram_base = uint32_t(buf.addr / uint64_t(h.cfg.inp_block_bytes()));
  load.y_size = 1;
  load.x_size = 1;
  load.x_stride = 1;
  load.x_pad0 = load.x_pad1 = 1;  // three entries with the padding
  std::string e = run_words(h, {encode(finish(), L), encode(load, L), encode(finish(), L)});
  EXPECT_NE(e.find("instruction 1"), std::string::npos) << e;
  EXPECT_NE(e.find("scratchpad buffer overflow"), std::string::npos) << e;
  EXPECT_EQ((h.dev->read_reg(reg::kStatus) >> reg::kFaultShift) & reg::kFaultMask, uint32_t(AccelFault::SramOverflow));
  load.x_pad1 = 0;  // two entries: fits
  EXPECT_EQ(run_words(h, {encode(load, L), encode(finish(), L)}), "<no error>");
  Instruction store;
  store.opcode = Opcode::Store;
  store.mem = MemType::Out;
  store.sram_base = uint32_t(h.cfg.out_depth() - 1);
  store.dram_base = uint32_t(buf.addr / uint64_t(h.cfg.out_block_bytes()));
  store.y_size = 1;
  store.x_size = 2;
  store.x_stride = 2;
  e = run_words(h, {encode(store, L), encode(finish(), L)});
  EXPECT_NE(e.find("instruction 0"), std::string::npos) << e;
  EXPECT_NE(e.find("scratchpad buffer overflow"), std::string::npos) << e;
}

TEST(RtlFaults, MicroOpIndexOutOfRange) {
  test::AccelHarness h(default_config());
  h.drv.gemm(UopKernelBuilder().loop(3, 1000, 0).push(100, 0).build(), true);  // accumulator index reaches 2100
  std::string e = test::error_text<DeviceError>([&] { h.drv.synchronize(); });
  EXPECT_NE(e.find("instruction 1 (GEMM"), std::string::npos) << e;
  EXPECT_NE(e.find("index out of range"), std::string::npos) << e;
}

TEST(RtlFaults, DeadlockIsDetectedWithTheWaitingInstruction) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction wait_load;  // compute waits for a token the load module never pushes
  wait_load.opcode = Opcode::Alu;
  wait_load.uop_begin = 0, wait_load.uop_end = 1, wait_load.iter_out = 1, wait_load.iter_in = 1;
  wait_load.dep.pop_prev = true;
  std::string e = run_words(h, {encode(finish(), L), encode(wait_load, L), encode(finish(), L)});
  EXPECT_NE(e.find("instruction 1 (ALU"), std::string::npos) << e;
  EXPECT_NE(e.find("dependency deadlock"), std::string::npos) << e;
}

TEST(RtlFaults, StreamWithoutFinish) {
  test::AccelHarness h(default_config());
  IsaLayout L(h.cfg);
  Instruction ld;
  ld.opcode = Opcode::Load;
  ld.mem = MemType::Inp;  // an empty transfer: a no-op
  std::string e = run_words(h, {encode(ld, L), encode(ld, L)});
  EXPECT_NE(e.find("instruction 2"), std::string::npos) << e;
  EXPECT_NE(e.find("no FINISH"), std::string::npos) << e;
}

TEST(RtlFaults, CycleLimitStopsALongRunWithAClearError) {
  AccelConfig cfg = default_config();
  sim::RtlSimOptions opt;
  opt.cycle_limit = 500;
  sim::RtlSim dev(cfg, opt);
  Driver drv(dev, cfg);
  drv.gemm(UopKernelBuilder().loop(64, 1, 0).loop(16, 0, 0).push(0, 0, 0).build(), false);  // ~1024 cycles
  std::string e = test::error_text<DeviceError>([&] { drv.synchronize(); });
  EXPECT_NE(e.find("no FINISH after 500 cycles"), std::string::npos) << e;
  // and the device is usable again
  sim::RtlSimOptions roomy;
  sim::RtlSim dev2(cfg, roomy);
  Driver drv2(dev2, cfg);
  drv2.gemm(UopKernelBuilder().loop(64, 1, 0).loop(16, 0, 0).push(0, 0, 0).build(), false);
  EXPECT_NO_THROW(drv2.synchronize());
  EXPECT_GT(dev2.cycles(), 1024u);
}

// Ctrl-C from Python (runtime/interrupt.h): the host's wait for a stream polls the interrupt flag
// before each slice of cycles it has the simulator run, so a requested stop ends a long stream
// there, with the device left mid-run.
TEST(RtlInterrupt, WaitingStopsAtTheNextSliceWhenAnInterruptIsRequested) {
  AccelConfig cfg = default_config();
  sim::RtlSim dev(cfg, sim::RtlSimOptions());
  Driver drv(dev, cfg);
  drv.gemm(UopKernelBuilder().loop(2048, 1, 0).loop(1024, 0, 0).push(0, 0, 0).build(), false);  // ~2M cycles
  runtime::request_interrupt();
  std::string e = test::error_text<Interrupted>([&] { drv.synchronize(); });
  runtime::clear_interrupt();
  EXPECT_NE(e.find("interrupted: the accelerator's run was stopped while it ran"), std::string::npos) << e;
  EXPECT_LT(dev.cycles(), 1000000u);  // stopped before a slice ran, not after the stream's 2M cycles
  // Without a request a stream runs to its end.
  sim::RtlSim dev2(cfg, sim::RtlSimOptions());
  Driver drv2(dev2, cfg);
  drv2.gemm(UopKernelBuilder().loop(64, 1, 0).loop(16, 0, 0).push(0, 0, 0).build(), false);
  EXPECT_NO_THROW(drv2.synchronize());
  EXPECT_GT(dev2.cycles(), 1024u);
}

TEST(RtlTiming, CountersMatchTheFunctionalSimulatorAndTimingRespondsToDram) {
  AccelConfig cfg = default_config();
  sim::FunctionalSim fsim(cfg);
  std::vector<int8_t> want, got, slow_got;
  auto fc = run_matmul(fsim, cfg, &want);
  sim::RtlSim fast(cfg);
  auto rc = run_matmul(fast, cfg, &got);
  EXPECT_EQ(got, want);
  for (auto& [name, v] : fc) {
    if (name.find("cycles") == std::string::npos) {
      EXPECT_EQ(rc[name], v) << name;
    }
  }
  const uint64_t cycles = fast.cycles();
  EXPECT_GT(cycles,
            rc["gemm_macs"] / (cfg.batch * cfg.block_in * cfg.block_out));  // cannot beat one GEMM step per cycle
  EXPECT_EQ(rc["gemm_cycles"] * cfg.batch * cfg.block_in * cfg.block_out, rc["gemm_macs"]);
  EXPECT_GT(rc["load_busy_cycles"], 0u);
  EXPECT_GT(rc["compute_busy_cycles"], rc["gemm_cycles"]);
  EXPECT_LE(rc["compute_busy_cycles"] + rc["compute_stall_cycles"], cycles);
  // Ten times the latency and a quarter of the bandwidth: same result, more cycles.
  sim::RtlSimOptions slow_dram;
  slow_dram.dram_latency = 320;
  slow_dram.dram_bytes_per_cycle = 4;
  sim::RtlSim slow(cfg, slow_dram);
  run_matmul(slow, cfg, &slow_got);
  EXPECT_EQ(slow_got, want);
  EXPECT_GT(slow.cycles(), cycles + 320);
}

// Runs one after the other on one device, with programs of the same length: the second must run
// (the end-of-run logic once took fetch's count from the run before and ended it at once).
TEST(RtlRuns, BackToBackRunsOfTheSameLengthBothExecute) {
  AccelConfig cfg = default_config();
  sim::RtlSim dev(cfg);
  for (uint64_t seed : {8u, 20u, 32u}) {
    sim::FunctionalSim fsim(cfg);
    std::vector<int8_t> want, got;
    run_matmul(fsim, cfg, &want, seed);
    auto counters = run_matmul(dev, cfg, &got, seed);
    EXPECT_EQ(got, want) << "seed " << seed;
    EXPECT_GT(counters["gemm_macs"], 0u) << "seed " << seed;
  }
}

// DRAM that holds ARREADY, AWREADY and WREADY low in about half the cycles: every handshake of
// the RTL waits (the AXI4 checker and the RTL's assertions watch that VALIDs and payloads hold),
// and the results still equal the functional simulator's; a DMA fault under back-pressure is
// still reported as the fault.
TEST(RtlProtocol, BackPressureOnEveryChannel) {
  for (auto& cfg : test::test_configs()) {
    SCOPED_TRACE(cfg.name);
    sim::FunctionalSim fsim(cfg);
    std::vector<int8_t> want, got, free_got;
    run_matmul(fsim, cfg, &want);
    sim::RtlSimOptions opt;
    opt.dram_stall_rate = 0.5;
    sim::RtlSim stalled(cfg, opt);
    run_matmul(stalled, cfg, &got);
    EXPECT_EQ(got, want);
    sim::RtlSim free_flowing(cfg);
    run_matmul(free_flowing, cfg, &free_got);
    EXPECT_GT(stalled.cycles(), free_flowing.cycles());
  }
  AccelConfig cfg = default_config();
  sim::RtlSimOptions opt;
  opt.dram_stall_rate = 0.5;
  sim::RtlSim dev(cfg, opt);
  Driver drv(dev, cfg);
  auto small = drv.alloc(64);
  drv.load_2d(MemType::Inp, 0, small.addr, 1, 8, 8);
  drv.dep_push(Module::Load, Module::Compute);
  drv.dep_pop(Module::Load, Module::Compute);
  std::string e = test::error_text<DeviceError>([&] { drv.synchronize(); });
  EXPECT_NE(e.find("DMA outside allocated device memory"), std::string::npos) << e;
  // A fault in the middle of a DMA whose next bursts are still being requested (one-beat rows, the
  // later ones past the allocation), and of a STORE.
  for (int trial = 0; trial < 8; ++trial) {
    sim::RtlSimOptions o;
    o.dram_stall_rate = 0.3 + 0.08 * trial;
    sim::RtlSim d(cfg, o);
    Driver dr(d, cfg);
    const uint64_t far = sim::RtlSim::kDramBase + (128 << 20);  // nothing allocated after it
    d.alloc_at(far, 1024);
    dr.load_2d(MemType::Inp, 0, far, 64, 1, 4);  // rows 16 and up lie past the 1 KiB buffer
    dr.dep_push(Module::Load, Module::Compute);
    dr.dep_pop(Module::Load, Module::Compute);
    e = test::error_text<DeviceError>([&] { dr.synchronize(); });
    EXPECT_NE(e.find("DMA outside allocated device memory"), std::string::npos) << e;
    // the STORE with the default latency and with a short one: then the error response comes
    // back while fewer than four bursts are out, so the next AW may well be waiting for AWREADY
    // (and must stay shown until it is taken)
    for (uint32_t latency : {o.dram_latency, uint32_t(1 + trial % 3)}) {
      sim::RtlSimOptions o2 = o;
      o2.dram_latency = latency;
      sim::RtlSim d2(cfg, o2);
      Driver dr2(d2, cfg);
      d2.alloc_at(far, 1024);
      dr2.store_2d(0, far, 64, 1, 4);
      e = test::error_text<DeviceError>([&] { dr2.synchronize(); });
      EXPECT_NE(e.find("DMA outside allocated device memory"), std::string::npos) << e;
    }
  }
  EXPECT_THROW(sim::RtlSimOptions::from_json(R"({"dram_stall_rate": 1.0})"), loom::ConfigError);
  EXPECT_EQ(sim::RtlSimOptions::from_json(R"({"dram_stall_rate": 0.25})").dram_stall_rate, 0.25);
}

TEST(RtlTrace, FstWaveformOfACycleWindow) {
  AccelConfig cfg = default_config();
  sim::RtlSimOptions opt;
  test::TestDir dir;
  opt.fst_path = dir.file("loom_rtl_trace.fst");
  opt.fst_begin = 10;
  opt.fst_end = 200;
  std::filesystem::remove(opt.fst_path);
  {
    sim::RtlSim dev(cfg, opt);
    std::vector<int8_t> got;
    run_matmul(dev, cfg, &got);
  }
  ASSERT_TRUE(std::filesystem::exists(opt.fst_path));
  EXPECT_GT(std::filesystem::file_size(opt.fst_path), 1000u);
}

TEST(RtlModels, EveryTestConfigHasAModelAndOthersAreRefusedByName) {
  for (auto& cfg : test::test_configs()) EXPECT_NO_THROW(sim::RtlSim dev(cfg)) << cfg.name;
  AccelConfig odd = default_config();
  odd.name = "odd";
  odd.out_buffer_bytes *= 2;
  std::string e = test::error_text<DeviceError>([&] { sim::RtlSim dev(odd); });
  EXPECT_NE(e.find("no RTL model was built for accelerator config 'odd'"), std::string::npos) << e;
  EXPECT_NE(e.find("LOOM_RTL_CONFIGS"), std::string::npos) << e;
  // Options are checked too.
  EXPECT_THROW(make_accel_device("rtl", R"({"name": "default", "rtl": {"dram_latncy": 3}})"), loom::ConfigError);
  EXPECT_NO_THROW(make_accel_device("rtl", R"({"name": "x", "rtl": {"dram_latency": 3}})"));
  EXPECT_THROW(make_accel_device("rtl", "{not json"), loom::ConfigError);
  EXPECT_THROW(make_accel_device("rtl", R"({"rtl": {"dram_latency": "slow"}})"), loom::ConfigError);
}

}  // namespace
}  // namespace loom::accel
