// The auto-tuner (tune/): every configuration in a template's space is buildable and fits the
// target's registers, tuned kernels compute what plain C++ loops compute, a configuration that
// computes something else is caught and never chosen, the cost model learns a known function,
// and the tuning log round-trips.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "common/test_util.h"
#include "loom/graph/builtin_models.h"
#include "loom/graph/reference.h"
#include "loom/ops/accel_operators.h"
#include "loom/ops/nn.h"
#include "loom/runtime/accel_device.h"
#include "loom/runtime/error.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "loom/tune/apply_log.h"
#include "loom/tune/cost_model.h"
#include "loom/tune/tuner.h"

namespace loom::tune {
namespace {

// Tunes `t` briefly (`trials` trials of one repeat); every trial's output must match the default's.
TuneResult quick_tune(const Template& t, int trials) {
  TuneOptions o;
  o.trials = trials;
  o.repeats = 1;
  o.min_run_seconds = 1e-4;
  TuneResult r = tune(t, o);
  for (auto& tr : r.trials) EXPECT_TRUE(tr.ok) << config_str(tr.config) << ": " << tr.error;
  return r;
}

codegen::TargetInfo avx2() {
  codegen::TargetInfo t;
  t.cpu = "znver3";
  t.features = "";
  t.vector_bits = 256;
  t.vector_registers = 16;
  return t;
}

codegen::TargetInfo avx512() {
  codegen::TargetInfo t = avx2();
  t.cpu = "skylake-avx512";
  t.vector_bits = 512;
  t.vector_registers = 32;
  return t;
}

// C = A x B with plain loops (row-major), the reference no Loom code computes.
std::vector<float> plain_gemm(const NDArray& A, const NDArray& B) {
  int64_t M = A.shape()[0], K = A.shape()[1], N = B.shape()[1];
  std::vector<float> C(size_t(M * N), 0.f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) C[size_t(i * N + j)] += A.data<float>()[i * K + k] * B.data<float>()[k * N + j];
  return C;
}

TEST(TuneTemplates, SpacesRespectTheRegisterFileAndContainTheDefault) {
  for (const codegen::TargetInfo& target : {avx2(), avx512()}) {
    auto g = make_gemm_template(96, 80, 64, target);
    std::vector<Config> space = g->space();
    EXPECT_GT(space.size(), 20u) << target.cpu;
    for (const Config& c : space)
      EXPECT_LE(c.at("mr") * c.at("nv") + c.at("nv") + 1, target.vector_registers) << config_str(c);
    EXPECT_NE(std::find(space.begin(), space.end(), g->default_config()), space.end()) << target.cpu;
    Conv2dShape cs;
    cs.in_channels = 16, cs.out_channels = 32, cs.height = cs.width = 14;
    auto conv = make_conv2d_template(cs, target);
    std::vector<Config> cspace = conv->space();
    EXPECT_GT(cspace.size(), 8u);
    for (const Config& c : cspace) {
      EXPECT_EQ(32 % c.at("oc_block"), 0) << config_str(c);
      // Columns need not divide the row (partitioned loops), but stay within it and the registers.
      EXPECT_LE(c.at("x_block"), 14) << config_str(c);
      int v = (c.at("oc_block") + target.float32_lanes() - 1) / target.float32_lanes();
      EXPECT_LE(c.at("x_block") * v, 2 * (target.vector_registers - v - 1)) << config_str(c);
    }
    EXPECT_NE(std::find(cspace.begin(), cspace.end(), conv->default_config()), cspace.end()) << target.cpu;
  }
  // Blocks of 8 on AVX-512 over an even row pair their columns (ops::nchwc_pairs_columns): every
  // tile's columns are whole pairs that divide the row, and the default is the schedule's own.
  Conv2dShape half;
  half.in_channels = 144, half.out_channels = 24, half.height = half.width = 28, half.kernel = 1, half.pad = 0;
  auto paired = make_conv2d_nchwc_template(half, 8, avx512());
  std::vector<Config> pspace = paired->space();
  EXPECT_GT(pspace.size(), 4u);
  for (const Config& c : pspace) {
    EXPECT_EQ(c.at("x_block") % 2, 0) << config_str(c);
    EXPECT_EQ(28 % c.at("x_block"), 0) << config_str(c);
  }
  ops::NchwcConvTile d = ops::nchwc_paired_conv_tile(16, 32, 3, 28);
  EXPECT_EQ(paired->default_config(), (Config{{"channel_blocks", d.channel_blocks}, {"x_block", d.x_block}}));
  EXPECT_NE(std::find(pspace.begin(), pspace.end(), paired->default_config()), pspace.end());
  EXPECT_THROW(make_gemm_template(0, 4, 4, avx2()), ShapeError);
}

TEST(Tuner, TunedGemmMatchesPlainLoopsAndIsNoSlowerThanTheDefault) {
  auto t = make_gemm_template(67, 45, 32, codegen::target_info());  // odd M and N: partial tiles
  TuneOptions o;
  o.trials = 10;
  o.initial = 4;
  o.repeats = 3;
  o.min_run_seconds = 2e-4;
  int progress_calls = 0;
  o.progress = [&](int done, int total, const Trial&, const Trial&) {
    ++progress_calls;
    EXPECT_LE(done, total);
  };
  TuneResult r = tune(*t, o);
  ASSERT_TRUE(r.best.ok) << r.best.error;
  EXPECT_EQ(r.trials.size(), 10u);
  EXPECT_EQ(progress_calls, 10);
  for (auto& tr : r.trials) EXPECT_TRUE(tr.ok) << config_str(tr.config) << ": " << tr.error;
  EXPECT_EQ(r.trials[0].config, t->default_config());
  // The confirmation round re-times the default next to the winners: the choice is never slower.
  EXPECT_GE(r.best.gflops, r.default_trial.gflops);
  EXPECT_EQ(r.used_model, cost_model_available());
  // The chosen configuration, built again, computes the product.
  std::vector<NDArray> args = t->arguments(5);
  runtime::Module m = t->build(r.best.config);
  m.call("kernel", args);
  std::vector<float> want = plain_gemm(args[0], args[1]);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(args[2].data<float>()[i], want[i], 1e-3f) << i;
}

TEST(Tuner, TunedConvMatchesTheDefault) {
  Conv2dShape cs;
  cs.in_channels = 8, cs.out_channels = 16, cs.height = cs.width = 10, cs.stride = 2;
  auto t = make_conv2d_template(cs, codegen::target_info());
  TuneOptions o;
  o.trials = 6;
  o.repeats = 2;
  o.min_run_seconds = 1e-4;
  TuneResult r = tune(*t, o);  // every trial's output is checked against the default's
  for (auto& tr : r.trials) EXPECT_TRUE(tr.ok) << config_str(tr.config) << ": " << tr.error;
  EXPECT_GE(r.best.gflops, r.default_trial.gflops);
}

// The int8 convolutions of quantized models (int16 pairs, byte groups): every trial reproduces
// the default's int32 output exactly, and the tuned kernel equals plain loops over the packed
// operands; the key carries the group, so float and int8 tiles never mix in a log.
TEST(Tuner, TunedInt8ConvsMatchPlainLoops) {
  Conv2dShape cs;
  cs.in_channels = 16, cs.out_channels = 16, cs.height = cs.width = 9, cs.stride = 1, cs.pad = 1;
  const int64_t b = 8;
  for (int group : {2, 4}) {
    SCOPED_TRACE("groups of " + std::to_string(group));
    auto t = make_conv2d_nchwc_template(cs, b, codegen::target_info(), group);
    EXPECT_EQ(t->op(), "conv2d_nchwc_int8");
    EXPECT_EQ(t->shape().back(), group);
    TuneResult r = quick_tune(*t, 5);
    std::vector<NDArray> args = t->arguments(3);
    runtime::Module m = t->build(r.best.config);
    std::vector<void*> ptrs;
    for (auto& a : args) ptrs.push_back(a.raw_data());
    m.get_function("kernel")(ptrs.data());
    const NDArray &x = args[0], &w = args[1],
                  &y = args[2];  // x [1, 2, 9, 9, 8], w [2, 2, 3, 3, 8/G, 8, G], y [1, 2, 9, 9, 8]
    for (int64_t o_ = 0; o_ < 16; ++o_)
      for (int64_t oy = 0; oy < 9; ++oy)
        for (int64_t ox = 0; ox < 9; ++ox) {
          int64_t want = 0;
          for (int64_t c = 0; c < 16; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                if (iy < 0 || iy >= 9 || ix < 0 || ix >= 9) continue;
                int64_t wi =
                    ((((((o_ / b) * 2 + c / b) * 3 + ky) * 3 + kx) * (b / group) + (c % b) / group) * b + o_ % b) *
                        group +
                    c % group;
                want +=
                    int64_t(x.get_as_double((((c / b) * 9 + iy) * 9 + ix) * b + c % b)) * int64_t(w.get_as_double(wi));
              }
          ASSERT_EQ(int64_t(y.get_as_double((((o_ / b) * 9 + oy) * 9 + ox) * b + o_ % b)), want)
              << o_ << " " << oy << " " << ox;
        }
  }
  EXPECT_EQ(make_conv2d_nchwc_template(cs, b, codegen::target_info())->op(), "conv2d_nchwc");
  EXPECT_NE(test::error_text<ShapeError>([&] {
              make_conv2d_nchwc_template(cs, b, codegen::target_info(), 3);
            }).find("int8 groups of 3"),
            std::string::npos);
}

// A template one of whose configurations computes something else: the tuner measures it, marks
// it failed with the reason, and does not choose it however fast it is.
class BrokenGemm : public Template {
 public:
  BrokenGemm() : inner_(make_gemm_template(32, 32, 32, codegen::target_info())) {}
  std::string op() const override { return "broken"; }
  std::vector<int64_t> shape() const override { return inner_->shape(); }
  std::vector<Knob> knobs() const override { return {{"wrong", {0, 1, 2}}}; }
  bool valid(const Config&) const override { return true; }
  Config default_config() const override { return {{"wrong", 0}}; }
  std::vector<float> features(const Config& c) const override { return {float(c.at("wrong"))}; }
  double flops() const override { return inner_->flops(); }
  runtime::Module build(const Config& c) const override {
    if (!c.at("wrong")) return inner_->build(inner_->default_config());
    // 1: A + B instead of A x B (cheap, and wrong); 2: 0 / 0 everywhere (NaN).
    ir::Tensor A = ir::placeholder({32, 32}, DataType::Float(32), "A"),
               B = ir::placeholder({32, 32}, DataType::Float(32), "B");
    const bool nan = c.at("wrong") == 2;
    ir::Tensor C = ir::compute(
        {32, 32},
        [&](ir::Var i, ir::Var j) { return nan ? (A(i, j) - A(i, j)) / (B(i, j) - B(i, j)) : A(i, j) + B(i, j); }, "C");
    schedule::Schedule s({C});
    return codegen::build_llvm({schedule::lower(s, {A, B, C}, "kernel")});
  }
  std::vector<NDArray> arguments(uint64_t seed) const override { return inner_->arguments(seed); }

 private:
  std::unique_ptr<Template> inner_;
};

TEST(Tuner, AConfigurationWithAWrongResultIsReportedAndNeverChosen) {
  BrokenGemm t;
  TuneOptions o;
  o.trials = 3;
  o.repeats = 2;
  o.batch = 1;  // one per round: also checks that such a search terminates
  TuneResult r = tune(t, o);
  ASSERT_EQ(r.trials.size(), 3u);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_FALSE(r.trials[i].ok) << config_str(r.trials[i].config);
    EXPECT_NE(r.trials[i].error.find("wrong result: relative error"), std::string::npos)
        << r.trials[i].error;  // NaN too
  }
  EXPECT_EQ(r.best.config, t.default_config());
}

// The confirmation round times calls with their weights flushed from the caches (cold_confirm):
// a matrix-vector product over 1 MiB of weights (in L2 or L3 between hot calls) then reads them
// from memory, several times slower. Up to three tries: another test running
// beside this one can slow a hot round down, never make a round without the flush cold.
TEST(Tuner, ConfirmationTimesColdWeights) {
  auto t = make_gemm_template(1, 512, 512, codegen::target_info());
  TuneOptions o;
  o.trials = 1;  // the default only: the confirmation round times it
  o.repeats = 5;
  o.confirm_seconds = 0.05;
  double cold = 0, hot = 0;
  for (int attempt = 0; attempt < 3 && !(cold > 1.5 * hot); ++attempt) {
    o.cold_confirm = false;
    hot = tune(*t, o).default_trial.seconds;
    o.cold_confirm = true;
    TuneResult r = tune(*t, o);
    ASSERT_TRUE(r.default_trial.ok) << r.default_trial.error;
    cold = r.default_trial.seconds;
  }
  EXPECT_GT(cold, 1.5 * hot) << "cold " << cold << " s, hot " << hot << " s";
}

// The cold confirmation keeps to its time: a kernel of a microsecond, whose calls the round counts
// from hot timings (tens of thousands), is timed cold for about confirm_seconds per candidate,
// not for that many flushes and wake-ups.
TEST(Tuner, ColdConfirmationKeepsToItsTime) {
  auto t = make_gemm_template(4, 16, 16, codegen::target_info());
  TuneOptions o;
  o.trials = 4;
  o.repeats = 1;
  o.use_model = false;
  o.min_run_seconds = 1e-4;
  o.confirm_seconds = 0.2;  // 5 rounds of 0.04 s, for the default and up to 3 others
  o.cold_confirm = true;
  auto start = std::chrono::steady_clock::now();
  TuneResult r = tune(*t, o);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.best.ok) << r.best.error;
  EXPECT_LT(wall, 4 * o.confirm_seconds + 2.0) << "the search and its confirmation took " << wall << " s";
}

// A GEMM smaller than the target's row tile: the default is clamped to fit, and tuning works.
TEST(Tuner, TinyShapesTune) {
  auto t = make_gemm_template(2, 16, 8, codegen::target_info());
  EXPECT_TRUE(t->valid(t->default_config())) << config_str(t->default_config());
  TuneOptions o;
  o.trials = 3;
  o.repeats = 1;
  o.min_run_seconds = 1e-5;
  TuneResult r = tune(*t, o);
  EXPECT_TRUE(r.best.ok) << r.best.error;
}

TEST(CostModel, LearnsTheRankingOfAKnownFunction) {
  if (!cost_model_available()) GTEST_SKIP() << "built without XGBoost";
  // y = -(a - 3)^2 - 0.5 (b - 5)^2 on a grid; predictions must put the optimum near (3, 5).
  std::vector<std::vector<float>> x;
  std::vector<float> y;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 10; b += 2)
      x.push_back({float(a), float(b)}), y.push_back(-float((a - 3) * (a - 3)) - 0.5f * float((b - 5) * (b - 5)));
  CostModel m;
  m.fit(x, y);
  std::vector<std::vector<float>> probe = {{3, 5}, {0, 0}, {7, 9}, {3, 9}};
  std::vector<float> p = m.predict(probe);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_GT(p[0], p[1]);
  EXPECT_GT(p[0], p[2]);
  EXPECT_GT(p[0], p[3]);
  EXPECT_NEAR(p[0], -0.5f, 1.0f);
}

TEST(TuningLog, KeepsTheFastestPerKeyAndNamesBadLines) {
  test::TestDir dir;
  std::string path = dir.file("tune.jsonl");
  auto t = make_gemm_template(64, 64, 64, avx2());
  TuneResult slow, fast, other;
  slow.best.config = {{"mr", 2}, {"nv", 1}, {"k_unroll", 1}}, slow.best.gflops = 10;
  fast.best.config = {{"mr", 6}, {"nv", 2}, {"k_unroll", 4}}, fast.best.gflops = 90;
  other.best.config = {{"mr", 4}, {"nv", 2}, {"k_unroll", 2}}, other.best.gflops = 500;
  append_to_log(path, *t, "cpu=a", slow);
  append_to_log(path, *t, "cpu=a", fast);
  append_to_log(path, *t, "cpu=b", other);  // another target
  EXPECT_EQ(best_from_log(path, "gemm", {64, 64, 64}, "cpu=a"), fast.best.config);
  EXPECT_EQ(best_from_log(path, "gemm", {64, 64, 64}, "cpu=b"), other.best.config);
  EXPECT_FALSE(best_from_log(path, "gemm", {32, 64, 64}, "cpu=a").has_value());
  std::ofstream(path, std::ios::app) << "{not json\n";
  std::string msg = test::error_text<ConfigError>([&] { best_from_log(path, "gemm", {64, 64, 64}, "cpu=a"); });
  EXPECT_NE(msg.find("line 4"), std::string::npos) << msg;
  msg = test::error_text<RuntimeError>([&] { best_from_log(dir.file("missing.jsonl"), "gemm", {1}, "x"); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

std::string file_text(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// `loom compile --tuning-log` reports "<found> of <looked up>" at `at` (read with `format`): it
// looked some kernels up and found every one.
void expect_every_kernel_found(const std::string& text, size_t at, const char* format) {
  ASSERT_NE(at, std::string::npos) << text;
  int found = 0, looked = 0;
  ASSERT_EQ(std::sscanf(text.c_str() + at, format, &found, &looked), 2) << text;
  EXPECT_GT(looked, 0);
  EXPECT_EQ(found, looked) << text;
}

// The built model computes what the reference interpreter computes on one random input.
void expect_like_the_interpreter(const graph::Graph& g, const graph::BuildResult& built) {
  auto ex = runtime::GraphExecutor::from_model_file(built.file, "model");
  NDArray x = test::random_float32(ex.input_spec(0).shape, 3);
  NDArray got = ex.run({x})[0], want = graph::reference_run(g, {x})[0];
  auto [err, scale] = test::max_error(got, want);
  EXPECT_LE(err, 1e-4 * scale);
}

// A log whose entry for `t` holds `r` (a knob missing) makes the build throw, naming the log and
// the entry's operator.
void expect_incomplete_entry_named(const graph::Graph& g, graph::BuildOptions o, const Template& t,
                                   const codegen::TargetInfo& target, const TuneResult& r, const std::string& bad) {
  append_to_log(bad, t, target_key(target, runtime::num_threads()), r);
  apply_log(o, std::make_shared<const TuningLog>(bad));
  std::string msg = test::error_text<Error>([&] { graph::build(g, o); });
  EXPECT_NE(msg.find("tuning log '" + bad + "': a " + t.op() + " entry"), std::string::npos) << msg;
}

// A program that links Loom applies a tuning log to its own build (tune/apply_log.h): the logged
// tile of one kernel is looked up and used, the others keep their defaults, the model still
// computes what the reference interpreter computes, and a malformed entry names the log.
TEST(ApplyLog, ALinkedProgramBuildsWithALoggedTile) {
  graph::Graph g = graph::builtin_model("resnet18", 1, 32);
  std::vector<graph::ConvKernelKey> keys = model_conv_kernels(g);
  ASSERT_GT(keys.size(), 2u);
  codegen::TargetInfo target = codegen::target_info();
  auto t = conv_kernel_template(keys[1], target);
  TuneResult r;
  r.best.config = {{"channel_blocks", 1}, {"x_block", 3}};  // not what the default picks
  test::TestDir dir;
  std::string path = dir.file("log.jsonl");
  append_to_log(path, *t, target_key(target, runtime::num_threads()), r);
  graph::BuildOptions o;
  LogUse use = apply_log(o, std::make_shared<const TuningLog>(path));
  graph::BuildResult built = graph::build(g, o);
  EXPECT_GE(use.cpu->looked_up, int(keys.size()));
  EXPECT_EQ(use.cpu->found, 1);
  EXPECT_EQ(use.accel->looked_up, 0);
  expect_like_the_interpreter(g, built);
  EXPECT_EQ(t->op(), "conv2d_nchwc");
  r.best.config = {{"channel_blocks", 1}};  // no x_block
  expect_incomplete_entry_named(g, o, *t, target, r, dir.file("bad.jsonl"));
}

// The products of a model's Winograd convolutions are tuned too: `model_conv_kernels` reports them
// (F(4x4) on ResNet-18's 32x32 and 16x16 layers at 128x128, F(2x2) on its 8x8 ones), every trial reproduces the
// default's output (fused rows, chunks of two, tiles), and a logged tile with its fused rows
// reaches the build, which still computes what the reference interpreter computes; an entry
// without fused rows names the log.
TEST(ApplyLog, WinogradProductsAreTunedAndLogged) {
  graph::Graph g = graph::builtin_model("resnet18", 1, 128);
  std::vector<graph::ConvKernelKey> keys = model_conv_kernels(g);
  std::map<int64_t, int> by_tile;
  for (auto& k : keys) by_tile[k.winograd]++;
  ASSERT_GT(by_tile[4], 0);
  ASSERT_GT(by_tile[2], 0);
  codegen::TargetInfo target = codegen::target_info();
  graph::ConvKernelKey f4;
  for (auto& k : keys)
    if (k.winograd == 4) f4 = k;
  auto t = conv_kernel_template(f4, target);
  EXPECT_EQ(t->op(), "conv2d_winograd");
  EXPECT_EQ(t->shape().back(), 4);
  EXPECT_EQ(knob(t->default_config(), "fused_rows"), 0);  // 4 tile rows: each stage over the map
  quick_tune(*t, 8);
  TuneResult r;
  r.best.config = {{"channel_blocks", 1}, {"x_block", 3}, {"fused_rows", 2}};  // not what the default picks
  ASSERT_TRUE(t->valid(r.best.config));
  test::TestDir dir;
  std::string path = dir.file("log.jsonl");
  append_to_log(path, *t, target_key(target, runtime::num_threads()), r);
  std::optional<ops::NchwcConvTile> logged =
      conv_tiles_from_log(std::make_shared<const TuningLog>(path), std::make_shared<LogLookups>())(f4);
  ASSERT_TRUE(logged.has_value());
  EXPECT_EQ(logged->channel_blocks, 1);
  EXPECT_EQ(logged->x_block, 3);
  EXPECT_EQ(logged->fused_rows, 2);
  graph::BuildOptions bo;
  LogUse use = apply_log(bo, std::make_shared<const TuningLog>(path));
  graph::BuildResult built = graph::build(g, bo);
  EXPECT_GE(use.cpu->found, 1);  // the F(4x4) layer's kernels (with and without the residual add)
  EXPECT_LT(use.cpu->found, use.cpu->looked_up);
  expect_like_the_interpreter(g, built);
  r.best.config = {{"channel_blocks", 1}, {"x_block", 3}};  // no fused_rows
  expect_incomplete_entry_named(g, bo, *t, target, r, dir.file("bad.jsonl"));
}

// A 3x3 stride-1 conv on an image's 3 channels runs as Winograd with input blocks of 3 and output
// blocks of the target's lanes: the tuner has no template for that, so the build asks for no tile
// (it used to throw), while the next conv, 64 -> 64, is keyed and tuned.
TEST(ApplyLog, WinogradOnAnImageIsNotKeyed) {
  graph::Graph g;
  int x = g.add_input("x", {{1, 3, 128, 128}, DataType::Float(32)});
  graph::Attrs pad1 = graph::Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  int c1 = g.add_op("conv2d", "c1", {x, g.add_constant("w1", test::random_float32({64, 3, 3, 3}, 1))}, pad1);
  int c2 = g.add_op("conv2d", "c2", {c1, g.add_constant("w2", test::random_float32({64, 64, 3, 3}, 2))}, pad1);
  g.outputs = {c2};
  std::vector<graph::ConvKernelKey> keys = model_conv_kernels(g);
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].layer.in_channels, 64);
  EXPECT_EQ(keys[0].winograd, 4);
}

// `loom tune model` tunes every blocked conv kernel of a model into the log, and `loom compile
// --tuning-log` finds a configuration for each of them (and says so).
TEST(LoomTune, ModelKernelsTunedAndReadByCompile) {
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt"), model = dir.file("m.loom");
  std::string cmd = std::string(LOOM_TOOL) +
                    " tune model --model resnet18 --image 32 --trials 3 --repeats 1 -q --log " + log + " > " + out +
                    " 2>&1 && " + LOOM_TOOL + " compile resnet18 --image 32 -q --tuning-log " + log + " -o " + model +
                    " >> " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  ASSERT_NE(text.find("distinct blocked conv2d kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("every conv kernel once"), std::string::npos) << text;
  expect_every_kernel_found(text, text.find("tuning log: "), "tuning log: %d of %d");
}

// A log tuned at one thread count, read by a compile at another: none found, and the compile says
// which target it looked up, which one the log has, and how to look that one up.
TEST(LoomTune, ALogOfAnotherThreadCountIsNamed) {
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt"), model = dir.file("m.loom");
  std::string cmd =
      std::string(LOOM_TOOL) + " tune model --model resnet18 --image 32 --threads 1 --trials 2 --repeats 1 -q --log " +
      log + " > " + out + " 2>&1 && " + LOOM_TOOL + " compile resnet18 --image 32 -q --threads 2 --tuning-log " + log +
      " -o " + model + " >> " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  EXPECT_NE(text.find("tuning log: 0 of "), std::string::npos) << text;
  EXPECT_NE(text.find(" threads=2); the log has entries of the others tuned for cpu="), std::string::npos) << text;
  EXPECT_NE(
      text.find(" threads=1: entries are per machine and thread count, and `loom compile --threads N` looks up N"),
      std::string::npos)
      << text;
}

// A quantized model's int8 convolutions: `loom tune model --quantize int8` tunes them (as
// conv2d_nchwc_int8) and `loom compile --quantize int8 --tuning-log` finds every one.
TEST(LoomTune, Int8ModelKernelsTunedAndReadByCompile) {
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt"), model = dir.file("m.loom");
  std::string cmd = std::string(LOOM_TOOL) +
                    " tune model --model resnet18 --image 32 --quantize int8 --trials 2 --repeats 1 -q --log " + log +
                    " > " + out + " 2>&1 && " + LOOM_TOOL +
                    " compile resnet18 --image 32 -q --quantize int8 --calibrate 2 --tuning-log " + log + " -o " +
                    model + " >> " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  ASSERT_NE(text.find("resnet18 (int8): "), std::string::npos) << text;
  std::string logged = file_text(log);
  EXPECT_NE(logged.find("conv2d_nchwc_int8"), std::string::npos) << logged;
  expect_every_kernel_found(text, text.find("tuning log: "), "tuning log: %d of %d");
}

bool have_rtl() {
  auto b = accel_backends();
  return std::find(b.begin(), b.end(), "rtl") != b.end();
}

// The accelerator template: every configuration fits the scratchpads (bias included, as in
// models), the default is the models' default, trials are decided by RTL cycles (deterministic),
// every trial reproduces the default's output bit for bit, and the chosen one equals the naive
// interpreter's evaluation of the operator's definition.
TEST(AccelTune, CyclesDecideAndTheTunedKernelIsExact) {
  accel::AccelConfig cfg = accel::AccelConfig::load(std::string(LOOM_ACCEL_CONFIG_DIR) + "/1x32x32.json");
  Conv2dShape s;
  s.in_channels = 64, s.out_channels = 64, s.height = s.width = 14;
  auto t = make_accel_conv2d_template(s, cfg, "rtl");  // registers the simulator backends
  if (!have_rtl()) GTEST_SKIP() << "built without the RTL simulation";
  EXPECT_EQ(t->measure(), Measure::Cycles);
  EXPECT_EQ(t->shape(), accel_conv_key(14, 14, 2, 2, 3, 3, 1));
  ops::AccelLimits lim = ops::accel_target(cfg).limits;
  ops::ConvShape conv{14, 14, 2, 2, 3, 3, 1, true};
  std::vector<Config> space = t->space();
  EXPECT_GT(space.size(), 20u);
  for (const Config& c : space)
    EXPECT_NO_THROW(ops::check_conv_tiling(conv, accel_conv_tiling(c), lim)) << config_str(c);
  ops::AccelConvTiling def = ops::choose_conv_tiling(conv, 2, lim);
  EXPECT_EQ(t->default_config(), (Config{{"h_block", def.h_block},
                                         {"w_block", def.w_block},
                                         {"oc_blocks", def.oc_blocks},
                                         {"virtual_threads", def.virtual_threads}}));
  TuneOptions o;
  o.trials = 12;
  o.initial = 4;
  TuneResult r = tune(*t, o);
  int ok = 0;
  for (const Trial& tr : r.trials) {
    if (!tr.ok) continue;
    ++ok;
    EXPECT_GT(tr.cycles, 0u);
    EXPECT_DOUBLE_EQ(tr.gflops, t->flops() / double(tr.cycles));
    EXPECT_GE(tr.cycles, r.best.cycles) << config_str(tr.config);
  }
  EXPECT_GE(ok, 8);
  EXPECT_LE(r.best.cycles, r.default_trial.cycles);
  // Deterministic: the same configuration simulates to the same count.
  EXPECT_EQ(t->simulate(r.best.config, o.seed).cycles, r.best.cycles);
  // The tuned kernel against the definition, evaluated by the naive interpreter.
  ops::AccelOperator a = accel_conv2d_operator(s, cfg, r.best.config);
  std::vector<NDArray> args = a.random_args(o.seed);
  NDArray want = a.expected(args), got = t->simulate(r.best.config, o.seed).output;
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get_as_double(i), want.get_as_double(i)) << "element " << i;
  // A backend that counts no cycles cannot decide anything: a clear error, not a zero-cycle win.
  auto fsim = make_accel_conv2d_template(s, cfg, "fsim");
  EXPECT_NE(test::error_text<DeviceError>([&] { fsim->simulate(fsim->default_config(), 1); }).find("counts no cycles"),
            std::string::npos);
  Conv2dShape bad = s;
  bad.in_channels = 48;
  EXPECT_NE(test::error_text<ShapeError>([&] { make_accel_conv2d_template(bad, cfg); }).find("not whole blocks"),
            std::string::npos);
}

// A logged tiling is tuned on the plain layer: a layer with per-channel shifts takes it where it
// still fits, one in passes of narrow digits (three sets of accumulators) falls back to the
// build's chooser instead of failing, and only the tilings taken count as found.
TEST(ApplyLog, AcceleratorTilingsOnlyWhereTheyFitTheLayer) {
  accel::AccelConfig cfg = accel::default_config();
  cfg.acc_buffer_bytes = 512 * cfg.acc_block_bytes();  // 512 entries: 2 x 14 x 14 outputs and their bias fit
  Conv2dShape s;
  s.in_channels = s.out_channels = 32, s.height = s.width = 14;
  auto t = make_accel_conv2d_template(s, cfg, "rtl");
  TuneResult r;
  r.best.config = {{"h_block", 14}, {"w_block", 14}, {"oc_blocks", 2}, {"virtual_threads", 1}};
  test::TestDir dir;
  const std::string path = dir.file("accel.jsonl");
  append_to_log(path, *t, accel_target_key(cfg, "rtl"), r);
  auto lookups = std::make_shared<LogLookups>();
  auto tiling_for = accel_conv_tilings_from_log(std::make_shared<const TuningLog>(path), cfg, lookups);
  ops::ConvShape conv{14, 14, 2, 2, 3, 3, 1, true};
  ASSERT_TRUE(tiling_for(conv).has_value());
  conv.channel_shifts = true;  // 396 entries
  ASSERT_TRUE(tiling_for(conv).has_value());
  EXPECT_EQ(tiling_for(conv)->h_block, 14);
  conv.channel_shifts = false;
  conv.weight_passes = 2;  // 1178 entries
  EXPECT_FALSE(tiling_for(conv).has_value());
  EXPECT_EQ(lookups->looked_up, 4);
  EXPECT_EQ(lookups->found, 3);
}

TEST(LoomTune, AcceleratorConvsTunedAndReadByCompile) {
  if (!have_rtl()) GTEST_SKIP() << "built without the RTL simulation";
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt"), model = dir.file("m.loom");
  std::string cmd = std::string(LOOM_TOOL) +
                    " tune model --model resnet18 --image 32 --target accel --trials 3 -q --log " + log + " > " + out +
                    " 2>&1 && " + LOOM_TOOL +
                    " compile resnet18 --image 32 -q --quantize int8 --target accel --tuning-log " + log + " -o " +
                    model + " >> " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  ASSERT_NE(text.find("distinct accelerator conv2d kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("every accelerator conv once"), std::string::npos) << text;
  size_t t = text.find("accelerator convs tuned");
  ASSERT_NE(t, std::string::npos) << text;
  expect_every_kernel_found(text, text.rfind(", ", t), ", %d of %d");
}

// Tuning on the performance model ("perf"), the RTL confirming each winner: the log gets the RTL's
// figures under the RTL's key, so the model compiler finds every kernel; the confirmed best is no
// slower than the default on the RTL.
TEST(LoomTune, AcceleratorConvsMeasuredOnThePerfModelConfirmedOnTheRtl) {
  if (!have_rtl()) GTEST_SKIP() << "built without the RTL simulation";
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt"), model = dir.file("m.loom");
  std::string cmd = std::string(LOOM_TOOL) +
                    " tune model --model resnet18 --image 32 --target accel --measure perf --trials 4 -q --log " + log +
                    " > " + out + " 2>&1 && " + LOOM_TOOL +
                    " compile resnet18 --image 32 -q --quantize int8 --target accel --tuning-log " + log + " -o " +
                    model + " >> " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  EXPECT_NE(text.find("on accel=default device=perf"), std::string::npos) << text;
  ASSERT_NE(text.find("on the RTL: default"), std::string::npos) << text;
  size_t t = text.find("accelerator convs tuned");
  ASSERT_NE(t, std::string::npos) << text;
  expect_every_kernel_found(text, text.rfind(", ", t), ", %d of %d");
  // Every entry: the RTL's key, the kept configuration no slower there than the default.
  std::ifstream f(log);
  int entries = 0;
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["target"], "accel=default device=rtl") << line;
    EXPECT_LE(j["cycles"].get<uint64_t>(), j["default_cycles"].get<uint64_t>()) << line;
    ++entries;
  }
  EXPECT_GE(entries, 5);
  // --measure is for the accelerator's tuning only.
  EXPECT_NE(std::system((std::string(LOOM_TOOL) + " tune gemm --measure perf > /dev/null 2>&1").c_str()), 0);
}

TEST(LoomTune, CommandLineTunesAndLogs) {
  test::TestDir dir;
  std::string log = dir.file("t.jsonl"), out = dir.file("out.txt");
  std::string cmd =
      std::string(LOOM_TOOL) + " tune gemm --size 48 --trials 5 --repeats 2 -q --log " + log + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = file_text(out);
  EXPECT_NE(text.find("tuned:"), std::string::npos) << text;
  EXPECT_NE(text.find("5 trials (0 failed)"), std::string::npos) << text;
  EXPECT_TRUE(
      best_from_log(log, "gemm", {48, 48, 48}, target_key(codegen::target_info(), runtime::num_threads())).has_value());
  if (cost_model_available()) {
    EXPECT_NE(text.find("cost model: gradient-boosted trees (XGBoost)"), std::string::npos) << text;
  }
}

// XGBoost is loaded when the tuner first needs it: a library that cannot be loaded leaves a tuner
// that searches at random.
TEST(LoomTune, WithoutItsCostModelLibraryTheTunerSearchesAtRandom) {
  test::TestDir dir;
  std::string out = dir.file("out.txt");
  std::string cmd = "LOOM_XGBOOST_LIBRARY=" + dir.file("missing.so") + " " + LOOM_TOOL +
                    " tune gemm --size 32 --trials 3 --repeats 1 -q > " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << file_text(out);
  std::string text = file_text(out);
  EXPECT_NE(text.find("random search"), std::string::npos) << text;
  EXPECT_NE(text.find("3 trials (0 failed)"), std::string::npos) << text;
}

}  // namespace
}  // namespace loom::tune
