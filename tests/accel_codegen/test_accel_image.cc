// Compiled accelerator code as a relocatable artifact (runtime/accel_image.h, accel/linker.h):
// a compiled operator runs bit-exactly wherever the runtime places its image, survives
// serialization, needs its relocations, and malformed images are refused naming what is wrong.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/test_util.h"
#include "loom/codegen/accel.h"
#include "loom/ops/accel_schedules.h"
#include "loom/runtime/error.h"
#include "loom/schedule/lower.h"
#include "loom/sim/functional_sim.h"

namespace loom {
namespace {

using namespace loom::ir;

// A 2-virtual-thread dense layer (4 input and 4 output blocks) with its inputs and reference.
struct DenseOp {
  accel::AccelConfig cfg = accel::default_config();
  LoweredFunc func;
  std::vector<NDArray> inputs;
  NDArray want;
  DenseOp() {
    ops::Blocking b{cfg.batch, cfg.block_in, cfg.block_out};
    Tensor X = placeholder({1, 4, b.batch, b.block_in}, DataType::Int(8), "X");
    Tensor W = placeholder({4, 4, b.block_out, b.block_in}, DataType::Int(8), "W");
    auto q = ops::dense_int8_blocked(X, W, {6, true});
    schedule::Schedule s({q.out});
    ops::schedule_dense_int8_accel(s, q, b, ops::AccelDenseTiling{1, 1, 2});
    func = schedule::lower(s, {X, W, q.out}, "dense");
    inputs = {test::random_array(X, 7, -128, 127), test::random_array(W, 8, -128, 127)};
    want = reference_eval({q.out}, {{X.op().get(), inputs[0]}, {W.op().get(), inputs[1]}})[0];
  }
  // Places `image` on `dev` (after `skip` bytes of other allocations), runs it and returns the output.
  NDArray run(const runtime::AccelImage& image, const std::vector<uint64_t>& offsets, AccelDevice& dev,
              uint64_t skip = 0) const {
    if (skip) dev.alloc(skip, 4096);
    runtime::LoadedAccelImage loaded(dev, image);
    for (size_t i = 0; i < inputs.size(); ++i)
      dev.write(loaded.address(offsets[i], inputs[i].nbytes()), inputs[i].raw_data(), inputs[i].nbytes());
    loaded.run(0);
    NDArray out = NDArray::empty(want.shape(), want.dtype());
    dev.read(loaded.address(offsets[2], out.nbytes()), out.raw_data(), out.nbytes());
    return out;
  }
};

TEST(AccelImage, RunsBitExactWhereverItIsPlaced) {
  DenseOp op;
  codegen::AccelModule m = codegen::build_accel(op.func, op.cfg);
  const auto& c = m.compiled();
  ASSERT_EQ(c.image.streams.size(), 1u);
  EXPECT_FALSE(c.image.relocations.empty());
  uint64_t bases[3];
  int k = 0;
  for (uint64_t skip : {uint64_t(0), uint64_t(1) << 20, uint64_t(5) << 12}) {
    sim::FunctionalSim dev(op.cfg);
    dev.alloc(64, 64);  // never at the link base
    NDArray got = op.run(c.image, c.arg_offsets, dev, skip);
    EXPECT_TRUE(test::arrays_close(got, op.want)) << "skip " << skip;
    runtime::LoadedAccelImage probe(dev, c.image);
    bases[k++] = probe.base();
  }
  EXPECT_NE(bases[0], bases[1]);
}

TEST(AccelImage, SerializedImageRunsTheSame) {
  DenseOp op;
  codegen::AccelModule m = codegen::build_accel(op.func, op.cfg);
  const auto& c = m.compiled();
  runtime::AccelImage parsed = runtime::AccelImage::parse(c.image.serialize(), "dense.img");
  EXPECT_EQ(parsed.serialize(), c.image.serialize());
  EXPECT_EQ(accel::AccelConfig::from_json(parsed.config_json), op.cfg);
  sim::FunctionalSim dev(op.cfg);
  EXPECT_TRUE(test::arrays_close(op.run(parsed, c.arg_offsets, dev, 3 << 12), op.want));
}

// Without its relocations the image reads and writes the wrong addresses once moved: the test of
// relocation is able to fail.
TEST(AccelImage, MovedImageWithoutRelocationsGoesWrong) {
  DenseOp op;
  codegen::AccelModule m = codegen::build_accel(op.func, op.cfg);
  runtime::AccelImage broken = m.compiled().image;
  broken.relocations.clear();
  sim::FunctionalSim dev(op.cfg);
  bool wrong = false;
  try {
    wrong = !test::arrays_close(op.run(broken, m.compiled().arg_offsets, dev, 1 << 20), op.want);
  } catch (const DeviceError&) {
    wrong = true;  // or it faults on an unallocated address
  }
  EXPECT_TRUE(wrong);
}

TEST(AccelImage, ModuleRunIsTheLinkedImage) {
  DenseOp op;
  codegen::AccelModule m = codegen::build_accel(op.func, op.cfg);
  std::vector<NDArray> args = op.inputs;
  args.push_back(NDArray::empty(op.want.shape(), op.want.dtype()));
  sim::FunctionalSim dev(op.cfg);
  auto stats = m.run(dev, args);
  EXPECT_TRUE(test::arrays_close(args.back(), op.want));
  EXPECT_EQ(stats.instructions, m.compiled().image.streams[0].count);
  // The listing is the image's stream, decoded: one line per instruction.
  std::string listing = m.disassemble();
  EXPECT_EQ(size_t(std::count(listing.begin(), listing.end(), '\n')), size_t(stats.instructions)) << listing;
}

runtime::AccelImage tiny_image() {
  runtime::AccelImage img;
  img.link_base = 0x10000;
  img.alignment = 4096;
  img.size = 4096;
  img.bytes.assign(32, 0);
  img.bytes[16] = 250;  // a 12-bit address field at bit 0 of byte 16, in units of 16 bytes
  img.relocations.push_back({16, 0, 12, 16});
  img.streams.push_back({"s", 0, 2});
  return img;
}

TEST(AccelImage, RelocationPatchesOnlyItsField) {
  runtime::AccelImage img = tiny_image();
  img.bytes[17] = 0xf0;  // the bits above the field belong to something else
  EXPECT_EQ(runtime::relocate(img, 0x10000)[16], 250);
  auto moved = runtime::relocate(img, 0x10000 + 4096);  // +256 units
  EXPECT_EQ(moved[16], 250);
  EXPECT_EQ(moved[17], 0xf1);
  EXPECT_THROW(runtime::relocate(img, 0x10000 - 4096), ModelError);  // 250 - 256 units: below address 0
}

// The last address a field holds and the first it does not, both ways, for a narrow field and a
// 64-bit one (whose arithmetic must not wrap).
TEST(AccelImage, RelocationBoundariesAreExact) {
  runtime::AccelImage img = tiny_image();
  img.alignment = 16;  // moves of one unit
  img.relocations[0].width = 8;
  EXPECT_EQ(runtime::relocate(img, 0x10000 + 5 * 16)[16], 255);
  EXPECT_THROW(runtime::relocate(img, 0x10000 + 6 * 16), ModelError);
  EXPECT_EQ(runtime::relocate(img, 0x10000 - 250 * 16)[16], 0);
  EXPECT_THROW(runtime::relocate(img, 0x10000 - 251 * 16), ModelError);
  img.relocations[0].width = 64;
  for (int b = 16; b < 24; ++b) img.bytes[size_t(b)] = 0xff;
  img.bytes[16] = 0xfd;  // 2^64 - 3
  const std::vector<uint8_t> top = runtime::relocate(img, 0x10000 + 2 * 16);
  EXPECT_EQ(top[16], 0xff);
  EXPECT_EQ(top[23], 0xff);
  EXPECT_THROW(runtime::relocate(img, 0x10000 + 3 * 16), ModelError);
  EXPECT_EQ(runtime::relocate(img, 0)[16], uint8_t(0xfd - 0x1000));
}

TEST(AccelImage, OverflowAndMisalignmentAreNamed) {
  runtime::AccelImage img = tiny_image();
  img.relocations[0].width = 8;
  try {
    runtime::relocate(img, 0x10000 + 4096);
    FAIL() << "no overflow reported";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("relocation 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8-bit field"), std::string::npos) << e.what();
  }
  try {
    runtime::relocate(img, 0x10000 + 64);
    FAIL() << "no misalignment reported";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("alignment 4096"), std::string::npos) << e.what();
  }
}

void expect_refused(const std::string& bytes, const std::string& what) {
  try {
    runtime::AccelImage::parse(bytes, "bad.img");
    FAIL() << "accepted; expected: " << what;
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.img"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(AccelImage, MalformedImagesAreRefusedNamingTheProblem) {
  runtime::AccelImage img = tiny_image();
  img.bytes[16] = 1;
  std::string good = img.serialize();
  EXPECT_NO_THROW(runtime::AccelImage::parse(good, "ok.img"));
  for (size_t cut : {size_t(4), size_t(20), good.size() - 1}) expect_refused(good.substr(0, cut), "truncated");
  expect_refused("XXXXXXXX" + good.substr(8), "bad magic");
  expect_refused(good + "x", "bytes after the last stream");
  std::string other_version = good;
  other_version[8] = 9;
  expect_refused(other_version, "format version 9");
  // Counts far beyond the bytes left are refused before anything is allocated.
  runtime::AccelImage many = img;
  many.relocations.clear();
  many.streams.clear();
  std::string s = many.serialize();
  size_t rel_count_at = s.size() - 8;  // u32 relocation count, then u32 stream count
  s[rel_count_at + 3] = char(0x7f);
  expect_refused(s, "relocation count");
  runtime::AccelImage outside = img;
  outside.relocations[0].offset = 31;
  outside.relocations[0].bit = 4;
  outside.relocations[0].width = 8;
  expect_refused(outside.serialize(), "lies outside");
  runtime::AccelImage stream_outside = img;
  stream_outside.streams[0].count = 3;
  expect_refused(stream_outside.serialize(), "stream 's'");
  runtime::AccelImage bad_scale = img;
  bad_scale.relocations[0].scale = 48;
  expect_refused(bad_scale.serialize(), "scale 48");
}

}  // namespace
}  // namespace loom
