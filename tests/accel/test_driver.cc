// The runtime driver as a stream builder: which instructions and dependency flags its calls
// produce, the micro-op kernel cache, and its argument checks.
#include <gtest/gtest.h>

#include "accel_harness.h"

namespace loom::accel {
namespace {

size_t count_if(const std::vector<Instruction>& s, auto pred) {
  return size_t(std::count_if(s.begin(), s.end(), pred));
}
bool is_uop_load(const Instruction& i) { return i.opcode == Opcode::Load && i.mem == MemType::Uop && i.x_size > 0; }

TEST(Driver, KernelBuiltTwiceIsUploadedAndLoadedOnce) {
  test::AccelHarness h(default_config());
  auto build = [] { return UopKernelBuilder().loop(4, 1, 1, 0).push(0, 0, 0).push(8, 1, 2).build(); };
  h.drv.gemm(build(), true);
  h.drv.gemm(build(), false);  // equal content, built separately
  h.drv.alu(build(), AluOp::Add, true, 1);
  EXPECT_EQ(h.drv.uploaded_kernels(), 1u);
  EXPECT_EQ(count_if(h.drv.stream(), is_uop_load), 1u);  // resident in the uop buffer for the whole stream
  const auto& s = h.drv.stream();
  EXPECT_EQ(s[1].uop_begin, s[2].uop_begin);
  EXPECT_EQ(s[1].uop_end - s[1].uop_begin, 2u);
  EXPECT_EQ(s[1].iter_out, 1u);  // one loop level: the inner one
  EXPECT_EQ(s[1].iter_in, 4u);
  EXPECT_EQ(s[1].src_factor_in, 1u);
  h.drv.synchronize();
  // A new stream loads the kernel into the uop buffer again but does not upload it again.
  h.drv.gemm(build(), true);
  EXPECT_EQ(count_if(h.drv.stream(), is_uop_load), 1u);
  EXPECT_EQ(h.drv.uploaded_kernels(), 1u);
  h.drv.gemm(UopKernelBuilder().push(1, 0, 0).build(), true);
  EXPECT_EQ(h.drv.uploaded_kernels(), 2u);
  h.drv.synchronize();
}

TEST(Driver, KernelsThatOverflowTheUopBufferAreReloaded) {
  AccelConfig cfg = default_config();
  cfg.uop_buffer_bytes = 64;  // 16 micro-ops
  test::AccelHarness h(cfg);
  auto kernel = [](uint32_t dst) {  // 10 micro-ops
    UopKernelBuilder b;
    for (uint32_t k = 0; k < 10; ++k) b.push(dst + k, 0, 0);
    return b.build();
  };
  h.drv.gemm(kernel(0), true);
  h.drv.gemm(kernel(10), true);  // does not fit next to the first: evicts it
  h.drv.gemm(kernel(0), true);   // loaded again
  const auto& s = h.drv.stream();
  EXPECT_EQ(count_if(s, is_uop_load), 3u);
  EXPECT_EQ(h.drv.uploaded_kernels(), 2u);
  for (auto& i : s) {
    if (i.opcode == Opcode::Gemm) {
      EXPECT_EQ(i.uop_begin, 0u);
    }
  }
  h.drv.synchronize();
  // With the code generators' rewrites the three loads stay: one LOAD of them all would leave the
  // first kernel's entries holding the second's.
  h.drv.set_finish_rewrites(true);
  h.drv.gemm(kernel(0), true);
  h.drv.gemm(kernel(10), true);
  h.drv.gemm(kernel(0), true);
  EXPECT_EQ(count_if(h.drv.seal_stream().instructions, is_uop_load), 3u);
  h.drv.set_finish_rewrites(false);
  UopKernelBuilder too_big;
  for (uint32_t k = 0; k < 17; ++k) too_big.push(k, 0, 0);
  EXPECT_NE(test::error_text<IsaError>([&] { h.drv.gemm(too_big.build(), true); }).find("exceeds the uop buffer (16)"),
            std::string::npos);
}

TEST(Driver, DependencyCallsSetVtaFlags) {
  test::AccelHarness h(default_config());
  auto buf = h.drv.alloc(1 << 12);
  h.drv.load_2d(MemType::Inp, 0, buf.addr, 1, 1, 1);
  h.drv.dep_push(Module::Load, Module::Compute);  // on the LOAD just emitted
  h.drv.dep_pop(Module::Load, Module::Compute);   // on the next compute instruction
  h.drv.gemm(UopKernelBuilder().push(0, 0, 0).build(), true);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, buf.addr, 1, 1, 1);
  h.drv.dep_push(Module::Store, Module::Compute);
  h.drv.dep_pop(Module::Store, Module::Compute);
  const auto& s = h.drv.stream();
  ASSERT_EQ(s.size(), 4u);  // LOAD inp, LOAD uop (carries the pop), GEMM, STORE
  EXPECT_TRUE(s[0].dep.push_next);
  EXPECT_TRUE(s[1].dep.pop_prev);  // the micro-op load is the first compute instruction
  EXPECT_FALSE(s[2].dep.pop_prev);
  EXPECT_TRUE(s[2].dep.push_next);
  EXPECT_TRUE(s[3].dep.pop_prev);
  EXPECT_TRUE(s[3].dep.push_prev);
  // A push from a module with no instruction yet rides on a no-op.
  test::AccelHarness g(default_config());
  g.drv.dep_push(Module::Store, Module::Compute);
  ASSERT_EQ(g.drv.stream().size(), 1u);
  EXPECT_EQ(g.drv.stream()[0].opcode, Opcode::Store);
  EXPECT_EQ(g.drv.stream()[0].x_size, 0u);
  EXPECT_TRUE(g.drv.stream()[0].dep.push_prev);
  EXPECT_NE(test::error_text<IsaError>([&] {
              g.drv.dep_push(Module::Load, Module::Store);
            }).find("only neighbouring modules"),
            std::string::npos);
  // FINISH waits for the store module, which has stored nothing but still drains.
  auto [addr, count] = h.drv.finalize_stream();
  EXPECT_EQ(h.drv.stream().back().opcode, Opcode::Finish);
  EXPECT_TRUE(h.drv.stream().back().dep.pop_next);
  EXPECT_EQ(count, h.drv.stream().size());
  (void)addr;
}

// A MAX and a MIN by immediates over the same micro-ops become one CLIP, in either order, when
// nothing stands between them; otherwise each stays an instruction of its own. The clamped
// values are checked on the device against both separate instructions.
TEST(Driver, AClampsTwoBoundsFoldIntoOneClip) {
  auto k = [] { return UopKernelBuilder().loop(3, 1, 1).push(0, 0).build(); };
  const int n = default_config().batch * default_config().block_out;
  auto a = test::random_values<int32_t>(size_t(3 * n), 11, -300, 300);
  std::vector<int8_t> folded;
  for (bool max_first : {true, false}) {
    test::AccelHarness h(default_config());
    auto in = h.upload(a);
    auto out = h.drv.alloc(3 * n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, 3, 3);
    h.drv.alu(k(), max_first ? AluOp::Max : AluOp::Min, true, max_first ? -20 : 90);
    EXPECT_TRUE(h.drv.fold_into_clip(k(), max_first ? AluOp::Min : AluOp::Max, max_first ? 90 : -20));
    const Instruction& clip = h.drv.stream().back();
    EXPECT_EQ(clip.alu_op, AluOp::Clip);
    EXPECT_EQ(clip_lo(clip.imm), -20);
    EXPECT_EQ(clip_hi(clip.imm), 90);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, 3, 3);
    auto counters = h.drv.synchronize();
    EXPECT_EQ(counters["alu_insns"], 1u);
    folded = h.download<int8_t>(out, 3 * n);
    for (int e = 0; e < 3 * n; ++e) ASSERT_EQ(folded[e], int8_t(std::clamp(a[e], -20, 90))) << "element " << e;
  }
  test::AccelHarness h(default_config());
  // Not folded: the same op twice, other micro-ops, bounds past a byte or crossed, a token between.
  h.drv.alu(k(), AluOp::Max, true, -20);
  EXPECT_FALSE(h.drv.fold_into_clip(k(), AluOp::Max, 5));
  EXPECT_FALSE(h.drv.fold_into_clip(UopKernelBuilder().loop(2, 1, 1).push(0, 0).build(), AluOp::Min, 90));
  EXPECT_FALSE(h.drv.fold_into_clip(k(), AluOp::Min, 200));
  EXPECT_FALSE(h.drv.fold_into_clip(k(), AluOp::Min, -30));
  h.drv.dep_push(Module::Compute, Module::Store);
  EXPECT_FALSE(h.drv.fold_into_clip(k(), AluOp::Min, 90));
  EXPECT_EQ(h.drv.stream().back().alu_op, AluOp::Max);
  EXPECT_NE(test::error_text<IsaError>([] { clip_imm(-129, 0); }).find("CLIP bounds [-129, 0]"), std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([&] { h.drv.alu(k(), AluOp::Clip, false); }).find("CLIP takes its bounds from"),
            std::string::npos);
}

// A SHR by an immediate followed by a clamp to an int8 range (or its non-negative part) over the
// same micro-ops becomes one SHRSAT, and the device's output equals the host's shift and clamp;
// bounds that are not such a range, other micro-ops, a token on the SHR or a left shift keep the
// two instructions.
TEST(Driver, AShiftAndAClampToARangeFuseIntoOneShrSat) {
  auto k = [] { return UopKernelBuilder().loop(3, 1, 1).push(0, 0).build(); };
  const int n = default_config().batch * default_config().block_out;
  auto a = test::random_values<int32_t>(size_t(3 * n), 13, -200000, 200000);
  a[0] = INT32_MIN, a[1] = INT32_MAX, a[2] = -1;
  for (int lo : {-128, 0}) {
    SCOPED_TRACE("lower bound " + std::to_string(lo));
    test::AccelHarness h(default_config());
    auto in = h.upload(a);
    auto out = h.drv.alloc(3 * n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, 3, 3);
    h.drv.alu(k(), AluOp::Shr, true, 9);
    h.drv.alu(k(), AluOp::Max, true, lo);
    EXPECT_TRUE(h.drv.fold_into_clip(k(), AluOp::Min, 127));
    ASSERT_EQ(h.drv.stream().size(), 3u);  // the accumulators' and the micro-op's LOADs, the SHRSAT
    const Instruction& fused = h.drv.stream().back();
    EXPECT_EQ(fused.alu_op, AluOp::ShrSat);
    EXPECT_EQ(ShrSatImm::decode(fused.imm).shift, 9);
    EXPECT_EQ(ShrSatImm::decode(fused.imm).lo(), lo);
    EXPECT_EQ(ShrSatImm::decode(fused.imm).hi(), 127);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, 3, 3);
    auto counters = h.drv.synchronize();
    EXPECT_EQ(counters["alu_insns"], 1u);
    auto got = h.download<int8_t>(out, 3 * n);
    for (int e = 0; e < 3 * n; ++e) ASSERT_EQ(got[e], int8_t(std::clamp(a[e] >> 9, lo, 127))) << "element " << e;
  }
  auto kept = [&](int shift, int lo, int hi, bool token, const UopKernel& shr_kernel) {
    test::AccelHarness h(default_config());
    h.drv.alu(shr_kernel, AluOp::Shr, true, shift);
    if (token) h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.alu(k(), AluOp::Max, true, lo);
    EXPECT_TRUE(h.drv.fold_into_clip(k(), AluOp::Min, hi));
    return h.drv.stream().back().alu_op == AluOp::Clip;
  };
  EXPECT_TRUE(kept(9, -100, 127, false, k()));  // not a w-bit range
  EXPECT_TRUE(kept(9, 1, 127, false, k()));     // nor its non-negative part
  EXPECT_TRUE(kept(9, -128, 127, false, UopKernelBuilder().loop(2, 1, 1).push(0, 0).build()));  // other micro-ops
  EXPECT_TRUE(kept(9, -128, 127, true, k()));                                                   // a token on the SHR
  EXPECT_TRUE(kept(-2, -128, 127, false, k()));                                                 // a left shift
  // A kernel naming one entry twice: the SHR pass shifts it twice before the CLIP pass clamps it
  // once, which one SHRSAT (a shift and a clamp per iteration) would not do.
  auto twice = [] { return UopKernelBuilder().loop(2, 0, 0).push(0, 0).build(); };
  {
    test::AccelHarness h(default_config());
    auto in = h.upload(a);
    auto out = h.drv.alloc(n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, 1, 1);
    h.drv.alu(twice(), AluOp::Shr, true, 4);
    h.drv.alu(twice(), AluOp::Max, true, -128);
    EXPECT_TRUE(h.drv.fold_into_clip(twice(), AluOp::Min, 127));
    EXPECT_EQ(h.drv.stream().back().alu_op, AluOp::Clip);
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, 1, 1);
    h.drv.synchronize();
    auto got = h.download<int8_t>(out, n);
    for (int e = 0; e < n; ++e) ASSERT_EQ(got[e], int8_t(std::clamp(a[e] >> 8, -128, 127))) << "element " << e;
  }
  // Out-of-range fields are refused by name; so are a register operand and reserved bits.
  EXPECT_NE(test::error_text<IsaError>([] {
              ShrSatImm{32, 8, false}.encode();
            }).find("SHRSAT shift 32"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([] {
              ShrSatImm{3, 17, false}.encode();
            }).find("SHRSAT width 17"),
            std::string::npos);
  test::AccelHarness h(default_config());
  EXPECT_NE(test::error_text<IsaError>([&] { h.drv.alu(k(), AluOp::ShrSat, false); }).find("SHRSAT takes its shift"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([&] { h.drv.alu(k(), AluOp::ShrSat, true, 1 << 10); }).find("reserved bits"),
            std::string::npos);
}

// A GEMM reset turned into a MOV of an immediate afterwards: the accumulators the GEMM then adds
// onto hold the immediate plus the products (checked on the device); anything but a reset, and
// immediates past 16 bits, are refused by name.
// A finished stream with the code generators' rewrites on: the closing ALU pass and its STORE
// come in four parts (each STORE part waits for its pass part only), and every micro-op LOAD
// becomes one at the start. The device's output equals the host's shift and clamp; with the
// rewrites off (hand-built streams) the stream is as written.
TEST(Driver, FinishedStreamsCloseInPartsAndLoadTheirMicroOpsOnce) {
  const int n = default_config().batch * default_config().block_out, entries = 256;
  auto a = test::random_values<int32_t>(size_t(entries * n), 21, -300000, 300000);
  for (bool rewrites : {true, false}) {
    SCOPED_TRACE(rewrites ? "rewrites" : "as written");
    test::AccelHarness h(default_config());
    h.drv.set_finish_rewrites(rewrites);
    auto in = h.upload(a);
    auto out = h.drv.alloc(entries * n);
    h.drv.load_2d(MemType::Acc, 0, in.addr, 1, entries, entries);
    h.drv.alu(UopKernelBuilder().loop(entries, 1, 0).push(0, 0).build(), AluOp::Add, true, 3);
    h.drv.alu(UopKernelBuilder().loop(entries, 1, 1).push(0, 0).build(), AluOp::Shr, true, 6);
    h.drv.alu(UopKernelBuilder().loop(entries, 1, 1).push(0, 0).build(), AluOp::Max, true, -128);
    EXPECT_TRUE(h.drv.fold_into_clip(UopKernelBuilder().loop(entries, 1, 1).push(0, 0).build(), AluOp::Min, 127));
    h.drv.dep_push(Module::Compute, Module::Store);
    h.drv.dep_pop(Module::Compute, Module::Store);
    h.drv.store_2d(0, out.addr, 1, entries, entries);
    Driver::SealedStream sealed = h.drv.seal_stream();
    const auto& s = sealed.instructions;
    auto alu_of = [&](AluOp op) {
      return count_if(s, [&](const Instruction& i) { return i.opcode == Opcode::Alu && i.alu_op == op; });
    };
    auto stores = [&] {
      return count_if(s, [](const Instruction& i) { return i.opcode == Opcode::Store && i.x_size; });
    };
    if (rewrites) {
      EXPECT_EQ(alu_of(AluOp::ShrSat), 4u);
      EXPECT_EQ(stores(), 4u);
      EXPECT_EQ(count_if(s, is_uop_load), 1u);
      EXPECT_TRUE(is_uop_load(s[0]));  // before anything that needs a micro-op
      for (const Instruction& i : s)
        if (i.opcode == Opcode::Store && i.x_size) {
          EXPECT_EQ(i.x_size, uint32_t(entries / 4));
          EXPECT_TRUE(i.dep.pop_prev);
        }
    } else {
      EXPECT_EQ(alu_of(AluOp::ShrSat), 1u);
      EXPECT_EQ(stores(), 1u);
      EXPECT_EQ(count_if(s, is_uop_load), 2u);  // the ADD's kernel, and the SHRSAT's
    }
    h.drv.device().launch(sealed.addr, sealed.count);
    h.drv.device().wait(std::chrono::milliseconds(60000));
    auto got = h.download<int8_t>(out, entries * n);
    for (int e = 0; e < entries * n; ++e)
      ASSERT_EQ(got[e], int8_t(std::clamp((a[e] + 3) >> 6, -128, 127))) << "element " << e;
  }
}

TEST(Driver, AResetBecomesAMoveOfAnImmediate) {
  test::AccelHarness h(default_config());
  const AccelConfig& c = h.drv.config();
  const int n = c.batch * c.block_out;
  auto out = h.drv.alloc(uint64_t(n));
  h.drv.gemm(UopKernelBuilder().push(0, 0, 0).build(), true);
  h.drv.preset_reset(h.drv.stream().size() - 1, 100);
  const Instruction& mov = h.drv.stream().back();
  EXPECT_EQ(mov.opcode, Opcode::Alu);
  EXPECT_EQ(mov.alu_op, AluOp::Mov);
  EXPECT_TRUE(mov.use_imm);
  EXPECT_EQ(mov.imm, 100);
  h.drv.alu(UopKernelBuilder().push(0, 0).build(), AluOp::Add, true, -30);
  h.drv.dep_push(Module::Compute, Module::Store);
  h.drv.dep_pop(Module::Compute, Module::Store);
  h.drv.store_2d(0, out.addr, 1, 1, 1);
  auto counters = h.drv.synchronize();
  EXPECT_EQ(counters["gemm_reset_steps"], 0u);
  for (int8_t v : h.download<int8_t>(out, uint64_t(n))) EXPECT_EQ(v, 70);
  test::AccelHarness g(default_config());
  g.drv.gemm(UopKernelBuilder().push(0, 0, 0).build(), false);
  const size_t update = g.drv.stream().size() - 1;  // after the micro-op load
  EXPECT_NE(test::error_text<IsaError>([&] {
              g.drv.preset_reset(update, 1);
            }).find("instruction " + std::to_string(update) + " is not a GEMM reset"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([&] { g.drv.preset_reset(7, 1); }).find("instruction 7 is not a GEMM reset"),
            std::string::npos);
  g.drv.gemm(UopKernelBuilder().push(0, 0, 0).build(), true);
  EXPECT_NE(test::error_text<IsaError>([&] {
              g.drv.preset_reset(g.drv.stream().size() - 1, 40000);
            }).find("immediate 40000 does not fit 16"),
            std::string::npos);
}

TEST(Driver, RejectsBadArgumentsWithClearErrors) {
  test::AccelHarness h(default_config());
  auto buf = h.drv.alloc(256);
  EXPECT_NE(test::error_text<DeviceError>([&] {
              h.drv.load_2d(MemType::Inp, 0, buf.addr + 4, 1, 1, 1);
            }).find("not aligned to a 16-byte inp entry"),
            std::string::npos);
  EXPECT_NE(test::error_text<DeviceError>([&] {
              std::vector<int8_t> big(300);
              h.drv.copy_to_device(buf, big.data(), big.size());
            }).find("overrun a 256-byte buffer"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([&] {
              h.drv.load_2d(MemType::Wgt, 1020, buf.addr, 1, 8, 8);
            }).find("field 'sram_base': wgt buffer overflow"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([&] {
              h.drv.load_2d(MemType::Uop, 0, buf.addr, 1, 1, 1, 1);
            }).find("micro-op loads cannot pad"),
            std::string::npos);
  EXPECT_NE(test::error_text<IsaError>([] {
              UopKernelBuilder().loop(1, 0, 0).loop(1, 0, 0).loop(1, 0, 0);
            }).find("at most two loop levels"),
            std::string::npos);
  EXPECT_THROW(UopKernelBuilder().build(), IsaError);
  EXPECT_THROW(h.drv.gemm(UopKernelBuilder().push(1u << 12, 0, 0).build(), true),
               IsaError);  // dst wider than the uop field
}

}  // namespace
}  // namespace loom::accel
