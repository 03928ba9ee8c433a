// The CPU operator templates: GEMM (ops::schedule_gemm_cpu), conv2d NCHW
// (ops::schedule_conv2d_nchw_cpu) and conv2d NCHWc, the kernel compiled models run
// (ops::schedule_conv2d_nchwc_cpu): their knobs, validity rules and cost-model features.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "loom/ops/cpu_schedules.h"
#include "loom/ops/layers.h"
#include "loom/ops/nn.h"
#include "loom/runtime/error.h"
#include "loom/runtime/thread_pool.h"
#include "loom/schedule/lower.h"
#include "loom/tune/template.h"

namespace loom::tune {

using ir::Expr;
using ir::Tensor;

std::string target_key(const codegen::TargetInfo& target, int threads) {
  return "cpu=" + target.cpu + " vector_bits=" + std::to_string(target.vector_bits) +
         " threads=" + std::to_string(threads);
}

namespace {

codegen::LLVMOptions options_for(const codegen::TargetInfo& t) {
  codegen::LLVMOptions o;
  o.target_cpu = t.cpu;
  o.target_features = t.features;
  return o;
}

std::vector<int> upto(int64_t n) {
  std::vector<int> v;
  for (int64_t i = 1; i <= n; ++i) v.push_back(int(i));
  return v;
}

// The NCHWc register tile both conv templates search, `channel_blocks` output blocks of `block`
// channels x `x_block` columns (the direct kernel's output columns, the Winograd products' tiles),
// as ops::nchwc_conv_tile counts it: `registers` for the tile, rows `columns` wide.
// `paired`: the direct kernel's half-vector blocks with two columns a vector
// (ops::nchwc_pairs_columns): columns in whole pairs that divide the row, one vector per pair and block.
struct NchwcTileSpace {
  int64_t out_blocks, block, columns;
  int lanes, registers;
  bool paired = false;

  std::vector<Knob> knobs() const {
    std::vector<int> x;
    if (paired) {
      for (int64_t v = 2; v <= std::min<int64_t>(columns, 32); v += 2)
        if (columns % v == 0) x.push_back(int(v));
    } else {
      x = upto(std::min<int64_t>(columns, 32));
    }
    return {{"channel_blocks", divisors(out_blocks, 8)}, {"x_block", x}};
  }
  // Vectors a column (paired: a pair of columns) holds per block, and such columns in x_block.
  double vectors(double cb) const { return cb * std::max(1.0, double(block) / lanes); }
  double tile_columns(double x) const { return paired ? x / 2 : x; }
  bool fits(const Config& c) const {
    int cb = knob(c, "channel_blocks"), x = knob(c, "x_block");
    if (cb < 1 || x < 1 || (paired && (x % 2 || columns % x))) return false;
    double v = vectors(cb);
    return out_blocks % cb == 0 && x <= columns && tile_columns(x) * v <= 2 * (registers - v - 1);
  }
  Config default_config() const {
    ops::NchwcConvTile d = paired ? ops::nchwc_paired_conv_tile(lanes, registers, out_blocks, columns)
                                  : ops::nchwc_conv_tile(lanes, registers, out_blocks, block, columns);
    return {{"channel_blocks", d.channel_blocks}, {"x_block", d.x_block}};
  }
  // The tile's cost-model features: blocks, columns, accumulators, loads per multiply-add, register
  // use, parallel tasks per thread (given), columns computed per column kept.
  std::vector<float> features(const Config& c, double tasks) const {
    double cb = knob(c, "channel_blocks"), x = knob(c, "x_block"), v = vectors(cb), n = tile_columns(x);
    return {float(cb),
            float(x),
            float(v * n),
            float((v + n) / (v * n)),
            float(n * v + v + 1) / registers,
            float(tasks / runtime::num_threads()),
            float(std::ceil(double(columns) / x) * x / double(columns))};
  }
};

class GemmTemplate : public Template {
 public:
  GemmTemplate(int64_t M, int64_t N, int64_t K, codegen::TargetInfo target)
      : M_(M), N_(N), K_(K), t_(std::move(target)) {
    if (M < 1 || N < 1 || K < 1)
      LOOM_THROW(ShapeError, "gemm template: sizes ", M, "x", N, "x", K, " must be positive");
  }
  std::string op() const override { return "gemm"; }
  std::vector<int64_t> shape() const override { return {M_, N_, K_}; }
  std::vector<Knob> knobs() const override {
    return {{"mr", {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14}},
            {"nv", {1, 2, 3, 4}},
            {"k_unroll", {1, 2, 4, 8}},
            {"form", {0, 1, 2}}};
  }
  bool valid(const Config& c) const override {
    int mr = knob(c, "mr"), nv = knob(c, "nv"), ku = knob(c, "k_unroll"), form = knob(c, "form");
    if (mr < 1 || nv < 1 || ku < 1 || form < 0 || form > 2) return false;  // a hand-edited log
    // Dot products along K: one vector of partial sums per row, only for one column of B.
    if (form == int(ops::GemmForm::DotK))
      return N_ == 1 && nv == 1 && K_ % t_.float32_lanes() == 0 && mr + 2 <= t_.vector_registers;
    // Accumulators, the B vectors and the broadcast A element must fit the register file.
    return mr * nv + nv + 1 <= t_.vector_registers && K_ % ku == 0 && mr <= M_;
  }
  Config default_config() const override {
    ops::GemmTiling g = ops::gemm_tiling_for(t_.float32_lanes(), t_.vector_registers, M_, N_, K_);
    return {{"mr", g.mr},
            {"nv", g.nr / t_.float32_lanes()},
            {"k_unroll", K_ % g.k_unroll == 0 ? g.k_unroll : 1},
            {"form", int(g.form)}};
  }
  std::vector<float> features(const Config& c) const override {
    double mr = knob(c, "mr"), nv = knob(c, "nv"), ku = knob(c, "k_unroll"), nr = nv * t_.float32_lanes();
    double tiles_n = std::ceil(N_ / nr), tiles_m = std::ceil(M_ / mr);
    return {float(mr),
            float(nv),
            float(ku),
            float(mr * nv),
            float((mr + nv) / (mr * nv)),
            float(mr * nv + nv + 1) / t_.vector_registers,
            float(tiles_n / runtime::num_threads()),
            float(1 - N_ / (tiles_n * nr)),
            float(1 - M_ / (tiles_m * mr)),
            float(knob(c, "form")),
            float(M_)};
  }
  double flops() const override { return 2.0 * double(M_) * double(N_) * double(K_); }
  runtime::Module build(const Config& c) const override {
    ops::GemmTiling g;
    g.mr = knob(c, "mr");
    g.nr = knob(c, "nv") * t_.float32_lanes();
    g.k_unroll = knob(c, "k_unroll");
    g.form = static_cast<ops::GemmForm>(knob(c, "form"));
    Tensor A = ir::placeholder({Expr(int(M_)), Expr(int(K_))}, DataType::Float(32), "A");
    Tensor B = ir::placeholder({Expr(int(K_)), Expr(int(N_))}, DataType::Float(32), "B");
    Tensor C = ops::gemm(A, B, g, "C");
    schedule::Schedule s({C});
    ops::schedule_gemm_cpu(s, C, g);
    return codegen::build_llvm({schedule::lower(s, {A, B, C}, "kernel")}, options_for(t_));
  }
  std::vector<NDArray> arguments(uint64_t seed) const override {
    NDArray a = NDArray::empty({M_, K_}, DataType::Float(32)), b = NDArray::empty({K_, N_}, DataType::Float(32));
    a.fill_random(seed);
    b.fill_random(seed + 1);
    return {a, b, NDArray::zeros({M_, N_}, DataType::Float(32))};
  }

 private:
  int64_t M_, N_, K_;
  codegen::TargetInfo t_;
};

class Conv2dTemplate : public Template {
 public:
  Conv2dTemplate(const Conv2dShape& s, codegen::TargetInfo target) : s_(s), t_(std::move(target)) {
    if (s.batch < 1 || s.in_channels < 1 || s.out_channels < 1 || s.kernel < 1 || s.stride < 1 || s.pad < 0 ||
        s.out_height() < 1 || s.out_width() < 1)
      LOOM_THROW(ShapeError, "conv2d template: invalid shape");
  }
  std::string op() const override { return "conv2d_nchw"; }
  std::vector<int64_t> shape() const override {
    return {s_.batch, s_.in_channels, s_.height, s_.width, s_.out_channels, s_.kernel, s_.stride, s_.pad};
  }
  std::vector<Knob> knobs() const override {
    std::vector<int> oc;
    for (int v : divisors(s_.out_channels, s_.out_channels))
      if (v % t_.float32_lanes() == 0 || v == s_.out_channels) oc.push_back(v);
    return {{"oc_block", oc},
            {"x_block", upto(std::min<int64_t>(s_.out_width(), 32))},
            {"window_outer", {0, 1}},
            {"parallel_rows", {0, 1}}};
  }
  bool valid(const Config& c) const override {
    int oc = knob(c, "oc_block"), x = knob(c, "x_block");
    if (oc < 1 || x < 1) return false;  // a hand-edited log
    int v = (oc + t_.float32_lanes() - 1) / t_.float32_lanes();
    // Accumulators (x columns of v vectors) within the registers, with room for v weights and a
    // broadcast — or at most twice that (a little spilling can still win on wide tiles).
    return s_.out_channels % oc == 0 && x <= s_.out_width() && x * v <= 2 * (t_.vector_registers - v - 1);
  }
  Config default_config() const override {
    ops::ConvNchwTiling d =
        ops::conv_nchw_tiling_for(t_.float32_lanes(), t_.vector_registers, int(s_.out_channels), int(s_.out_width()));
    return {{"oc_block", d.oc_block},
            {"x_block", d.x_block},
            {"window_outer", d.window_outer ? 1 : 0},
            {"parallel_rows", 0}};
  }
  std::vector<float> features(const Config& c) const override {
    double oc = knob(c, "oc_block"), x = knob(c, "x_block"), v = std::ceil(oc / t_.float32_lanes());
    double tasks =
        double(s_.batch) * double(s_.out_channels) / oc * (knob(c, "parallel_rows") ? double(s_.out_height()) : 1.0);
    return {float(oc),
            float(x),
            float(knob(c, "window_outer")),
            float(knob(c, "parallel_rows")),
            float(v * x),
            float((v + x) / (v * x)),
            float(x * v + v + 1) / t_.vector_registers,
            float(tasks / runtime::num_threads()),
            float(s_.in_channels * s_.kernel * s_.kernel),
            float(std::ceil(double(s_.out_width()) / x) * x / double(s_.out_width()))};
  }
  double flops() const override {
    return 2.0 * double(s_.batch) * double(s_.out_channels) * double(s_.out_height()) * double(s_.out_width()) *
           double(s_.in_channels) * double(s_.kernel * s_.kernel);
  }
  runtime::Module build(const Config& c) const override {
    ops::ConvNchwTiling t;
    t.oc_block = knob(c, "oc_block");
    t.x_block = knob(c, "x_block");
    t.window_outer = knob(c, "window_outer") != 0;
    t.parallel_rows = knob(c, "parallel_rows") != 0;
    Tensor X =
        ir::placeholder({Expr(int(s_.batch)), Expr(int(s_.in_channels)), Expr(int(s_.height)), Expr(int(s_.width))},
                        DataType::Float(32), "X");
    Tensor W = ir::placeholder(
        {Expr(int(s_.out_channels)), Expr(int(s_.in_channels)), Expr(int(s_.kernel)), Expr(int(s_.kernel))},
        DataType::Float(32), "W");
    Tensor Y = ops::conv2d_nchw_packed(X, W, int(s_.stride), int(s_.pad), t.oc_block, "Y");
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchw_cpu(s, Y, t);
    return codegen::build_llvm({schedule::lower(s, {X, W, Y}, "kernel")}, options_for(t_));
  }
  std::vector<NDArray> arguments(uint64_t seed) const override {
    NDArray x = NDArray::empty({s_.batch, s_.in_channels, s_.height, s_.width}, DataType::Float(32));
    NDArray w = NDArray::empty({s_.out_channels, s_.in_channels, s_.kernel, s_.kernel}, DataType::Float(32));
    x.fill_random(seed);
    w.fill_random(seed + 1);
    return {x, w, NDArray::zeros({s_.batch, s_.out_channels, s_.out_height(), s_.out_width()}, DataType::Float(32))};
  }

 private:
  Conv2dShape s_;
  codegen::TargetInfo t_;
};

// conv2d on channel-blocked activations [N, C/b, H, W, b] with weights [O/b, C/b, k, k, b, b]
// (float32), or int8 data with grouped weights [O/b, C/b, k, k, b/G, b, G] (int8_group G).
class Conv2dNchwcTemplate : public Template {
 public:
  Conv2dNchwcTemplate(const Conv2dShape& s, int64_t block, codegen::TargetInfo target, int group)
      : s_(s), b_(block), t_(std::move(target)), g_(group) {
    if (s.batch < 1 || s.in_channels < 1 || s.out_channels < 1 || s.kernel < 1 || s.stride < 1 || s.pad < 0 ||
        s.out_height() < 1 || s.out_width() < 1 || block < 1 || s.in_channels % block || s.out_channels % block)
      LOOM_THROW(ShapeError, "conv2d NCHWc template: invalid shape or channels not a multiple of the block ", block);
    if ((g_ != 0 && g_ != 2 && g_ != 4) || (g_ && block % g_))
      LOOM_THROW(ShapeError, "conv2d NCHWc template: int8 groups of ", g_, " (2 or 4) must divide the block ", block);
  }
  std::string op() const override { return g_ ? "conv2d_nchwc_int8" : "conv2d_nchwc"; }
  std::vector<int64_t> shape() const override {
    std::vector<int64_t> v{s_.batch,  s_.in_channels, s_.height, s_.width, s_.out_channels,
                           s_.kernel, s_.stride,      s_.pad,    b_};
    if (g_) v.push_back(g_);
    return v;
  }
  std::vector<Knob> knobs() const override { return tiles().knobs(); }
  bool valid(const Config& c) const override { return tiles().fits(c); }
  Config default_config() const override { return tiles().default_config(); }
  std::vector<float> features(const Config& c) const override {
    double tasks =
        double(s_.batch) * double(s_.out_channels / b_) / knob(c, "channel_blocks") * double(s_.out_height());
    std::vector<float> f = tiles().features(c, tasks);
    f.push_back(float(s_.in_channels * s_.kernel * s_.kernel));
    f.push_back(float(s_.stride));
    return f;
  }
  double flops() const override {
    return 2.0 * double(s_.batch) * double(s_.out_channels) * double(s_.out_height()) * double(s_.out_width()) *
           double(s_.in_channels) * double(s_.kernel * s_.kernel);
  }
  runtime::Module build(const Config& c) const override {
    ops::NchwcConvTile tile{knob(c, "channel_blocks"), knob(c, "x_block")};
    int b = int(b_);
    Tensor X = ir::placeholder(
        {Expr(int(s_.batch)), Expr(int(s_.in_channels / b)), Expr(int(s_.height)), Expr(int(s_.width)), Expr(b)},
        g_ ? DataType::Int(8) : DataType::Float(32), "X");
    std::vector<Expr> ws;
    for (int64_t d : weight_shape()) ws.push_back(Expr(int(d)));
    Tensor W = ir::placeholder(ws, weight_dtype(), "W");
    ops::Conv2dParams p;
    p.strides = {s_.stride, s_.stride};
    p.pads = {s_.pad, s_.pad, s_.pad, s_.pad};
    p.oc_block = b_;
    Tensor Y = ops::conv2d_nchwc(X, W, Tensor(), p, "Y");
    schedule::Schedule s({Y});
    ops::schedule_conv2d_nchwc_cpu(s, Y, Y, t_.float32_lanes(), t_.vector_registers, tile);
    return codegen::build_llvm({schedule::lower(s, {X, W, Y}, "kernel")}, options_for(t_));
  }
  std::vector<NDArray> arguments(uint64_t seed) const override {
    std::vector<int64_t> out{s_.batch, s_.out_channels / b_, s_.out_height(), s_.out_width(), b_};
    if (g_) {
      // Byte groups read their input as uint8: data in [0, 127], as after a ReLU.
      NDArray x = NDArray::empty({s_.batch, s_.in_channels / b_, s_.height, s_.width, b_}, DataType::Int(8));
      NDArray w = NDArray::empty({s_.out_channels, s_.in_channels, s_.kernel, s_.kernel}, DataType::Int(8));
      x.fill_random(seed, g_ == 4 ? 0 : -128, 127);
      w.fill_random(seed + 1, -128, 127);
      return {x, ops::pack_conv_weights_int8_groups(w, b_, b_, g_), NDArray::zeros(out, DataType::Int(32))};
    }
    NDArray x = NDArray::empty({s_.batch, s_.in_channels / b_, s_.height, s_.width, b_}, DataType::Float(32));
    NDArray w = NDArray::empty(weight_shape(), DataType::Float(32));
    x.fill_random(seed);
    w.fill_random(seed + 1);
    return {x, w, NDArray::zeros(out, DataType::Float(32))};
  }

 private:
  // The register tile, with the registers ops::schedule_conv2d_nchwc_cpu leaves it.
  NchwcTileSpace tiles() const {
    return {s_.out_channels / b_,
            b_,
            s_.out_width(),
            t_.float32_lanes(),
            t_.vector_registers - ops::int8_conv_spare_registers(g_),
            !g_ && ops::nchwc_pairs_columns(t_.float32_lanes(), b_, s_.out_width())};
  }
  std::vector<int64_t> weight_shape() const {
    if (g_) return {s_.out_channels / b_, s_.in_channels / b_, s_.kernel, s_.kernel, b_ / g_, b_, g_};
    return {s_.out_channels / b_, s_.in_channels / b_, s_.kernel, s_.kernel, b_, b_};
  }
  DataType weight_dtype() const {
    return g_ == 2 ? DataType::Int(16) : g_ == 4 ? DataType::Int(8) : DataType::Float(32);
  }

  Conv2dShape s_;
  int64_t b_;
  codegen::TargetInfo t_;
  int g_;
};

// The products of a Winograd convolution F(m x m, 3 x 3) on [N, C/b, H, W, b], weights
// transformed [alpha^2, O/b, C/b, b, b] (float32), stride 1.
class Conv2dWinogradTemplate : public Template {
 public:
  Conv2dWinogradTemplate(const Conv2dShape& s, int64_t block, int m, codegen::TargetInfo target)
      : s_(s), b_(block), m_(m), t_(std::move(target)) {
    if (s.batch < 1 || s.in_channels < 1 || s.out_channels < 1 || s.kernel != 3 || s.stride != 1 || s.pad < 0 ||
        s.out_height() < 1 || s.out_width() < 1 || block < 1 || s.in_channels % block || s.out_channels % block)
      LOOM_THROW(ShapeError, "conv2d Winograd template: needs a 3x3 stride-1 layer with channels a multiple of the ",
                 "block ", block);
    ops::winograd_alpha(m);  // ShapeError for a tile without matrices
  }
  std::string op() const override { return "conv2d_winograd"; }
  std::vector<int64_t> shape() const override {
    return {s_.batch, s_.in_channels, s_.height, s_.width, s_.out_channels, s_.kernel, s_.stride, s_.pad, b_, m_};
  }
  std::vector<Knob> knobs() const override {
    std::vector<Knob> k = tiles().knobs();
    k.push_back({"fused_rows", {0, 1, 2}});
    return k;
  }
  bool valid(const Config& c) const override {
    int rows = knob(c, "fused_rows");
    return rows >= 0 && rows <= 2 && rows <= tiles_high() && tiles().fits(c);
  }
  Config default_config() const override {
    Config c = tiles().default_config();
    c["fused_rows"] = tiles_high() >= 14 ? 1 : 0;
    return c;
  }
  std::vector<float> features(const Config& c) const override {
    double cb = knob(c, "channel_blocks"), rows = knob(c, "fused_rows");
    double alpha = m_ + 2, tasks = rows ? double(s_.batch) * std::ceil(double(tiles_high()) / rows)
                                        : alpha * alpha * double(s_.out_channels / b_) / cb * double(tiles_high());
    std::vector<float> f = tiles().features(c, tasks);
    f.push_back(float(s_.in_channels));
    f.push_back(float(rows));
    f.push_back(float(tiles_high() * tiles_wide()));
    return f;
  }
  double flops() const override {
    return 2.0 * double(s_.batch) * double(s_.out_channels) * double(s_.out_height()) * double(s_.out_width()) *
           double(s_.in_channels) * 9.0;
  }
  runtime::Module build(const Config& c) const override {
    ops::NchwcConvTile tile{knob(c, "channel_blocks"), knob(c, "x_block"), knob(c, "fused_rows")};
    int b = int(b_), a = ops::winograd_alpha(m_);
    Tensor X = ir::placeholder(
        {Expr(int(s_.batch)), Expr(int(s_.in_channels / b)), Expr(int(s_.height)), Expr(int(s_.width)), Expr(b)},
        DataType::Float(32), "X");
    Tensor U =
        ir::placeholder({Expr(a * a), Expr(int(s_.out_channels / b)), Expr(int(s_.in_channels / b)), Expr(b), Expr(b)},
                        DataType::Float(32), "U");
    ops::Conv2dParams p;
    p.pads = {s_.pad, s_.pad, s_.pad, s_.pad};
    Tensor Y = ops::conv2d_winograd_nchwc(X, U, Tensor(), p, m_, "Y");
    schedule::Schedule s({Y});
    ops::schedule_conv2d_winograd_cpu(s, Y, t_.float32_lanes(), t_.vector_registers, tile);
    return codegen::build_llvm({schedule::lower(s, {X, U, Y}, "kernel")}, options_for(t_));
  }
  std::vector<NDArray> arguments(uint64_t seed) const override {
    NDArray x = NDArray::empty({s_.batch, s_.in_channels / b_, s_.height, s_.width, b_}, DataType::Float(32));
    NDArray w = NDArray::empty({s_.out_channels, s_.in_channels, 3, 3}, DataType::Float(32));
    x.fill_random(seed);
    w.fill_random(seed + 1);
    return {x, ops::pack_winograd_weights(w, m_, b_, b_),
            NDArray::zeros({s_.batch, s_.out_channels / b_, s_.out_height(), s_.out_width(), b_}, DataType::Float(32))};
  }

 private:
  int64_t tiles_high() const { return (s_.out_height() + m_ - 1) / m_; }
  int64_t tiles_wide() const { return (s_.out_width() + m_ - 1) / m_; }
  NchwcTileSpace tiles() const {
    return {s_.out_channels / b_, b_, tiles_wide(), t_.float32_lanes(), t_.vector_registers};
  }

  Conv2dShape s_;
  int64_t b_;
  int m_;
  codegen::TargetInfo t_;
};

}  // namespace

std::unique_ptr<Template> make_conv2d_nchwc_template(const Conv2dShape& shape, int64_t block,
                                                     const codegen::TargetInfo& target, int int8_group) {
  return std::make_unique<Conv2dNchwcTemplate>(shape, block, target, int8_group);
}

std::unique_ptr<Template> make_conv2d_winograd_template(const Conv2dShape& shape, int64_t block, int m,
                                                        const codegen::TargetInfo& target) {
  return std::make_unique<Conv2dWinogradTemplate>(shape, block, m, target);
}

std::unique_ptr<Template> make_gemm_template(int64_t M, int64_t N, int64_t K, const codegen::TargetInfo& target) {
  return std::make_unique<GemmTemplate>(M, N, K, target);
}

std::unique_ptr<Template> make_conv2d_template(const Conv2dShape& shape, const codegen::TargetInfo& target) {
  return std::make_unique<Conv2dTemplate>(shape, target);
}

}  // namespace loom::tune
