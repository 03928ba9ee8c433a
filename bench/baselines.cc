#include "baselines.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dnnl.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace loom::bench {

double time_best_of(int reps, const std::function<void()>& fn, double min_total_s) {
  using clock = std::chrono::steady_clock;
  fn();  // warm-up: caches, page faults, lazy initialization
  double best = 1e30, total = 0;
  // Until both reps runs and min_total_s (the cap only bounds an empty body): a sub-millisecond
  // kernel capped at 10x reps ran too briefly after settle()'s pause and read slow from run to run
  // (ResNet-18's strided 1x1 convs, tune_bench).
  const int64_t cap = 1000000LL * std::max(1, reps);
  for (int64_t i = 0; i < cap && (i < reps || total < min_total_s); ++i) {
    auto t0 = clock::now();
    fn();
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  return best;
}

std::vector<double> time_best_interleaved(int reps, const std::vector<std::function<void()>>& fns, int rounds,
                                          double min_total_s) {
  std::vector<double> best(fns.size(), 1e30);
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      settle();
      best[i] = std::min(best[i], time_best_of(std::max(1, reps / rounds), fns[i], min_total_s / rounds));
    }
  return best;
}

void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

// ---- OpenBLAS ----

std::string openblas_description() {
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  return std::string(openblas_get_config()) + ", core " + openblas_get_corename() + ", OPENBLAS_CORETYPE=" +
         (env ? std::string(env) + " (forced by the environment; unset it to let OpenBLAS pick its kernels)" : "unset");
}

void openblas_set_threads(int n) { openblas_set_num_threads(n); }

void openblas_sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

// ---- oneDNN ----

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  std::string runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "threadpool/other";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
         ", CPU runtime " + runtime;
}

void onednn_set_threads(int n) { omp_set_num_threads(n); }

namespace {
dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
}  // namespace

namespace {
// A row-major matmul primitive for the given element types, created once.
struct MatmulPrimitive {
  dnnl::stream stream{cpu_engine()};
  dnnl::memory::desc a_md, b_md, c_md;
  dnnl::matmul prim;
  MatmulPrimitive(int64_t m, int64_t n, int64_t k, dnnl::memory::data_type a, dnnl::memory::data_type b,
                  dnnl::memory::data_type c)
      : a_md({m, k}, a, dnnl::memory::format_tag::ab),
        b_md({k, n}, b, dnnl::memory::format_tag::ab),
        c_md({m, n}, c, dnnl::memory::format_tag::ab) {
    dnnl::matmul::desc d(a_md, b_md, c_md);
    prim = dnnl::matmul(dnnl::matmul::primitive_desc(d, cpu_engine()));
  }
  void run(const void* a, const void* b, void* c) {
    auto& e = cpu_engine();
    dnnl::memory am(a_md, e, const_cast<void*>(a)), bm(b_md, e, const_cast<void*>(b)), cm(c_md, e, c);
    prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
  }
};
using dt = dnnl::memory::data_type;
}  // namespace

struct OneDnnMatmul::Impl : MatmulPrimitive {
  using MatmulPrimitive::MatmulPrimitive;
};
OneDnnMatmul::OneDnnMatmul(int64_t m, int64_t n, int64_t k)
    : impl_(std::make_unique<Impl>(m, n, k, dt::f32, dt::f32, dt::f32)) {}
OneDnnMatmul::~OneDnnMatmul() = default;
void OneDnnMatmul::run(const float* a, const float* b, float* c) { impl_->run(a, b, c); }

struct OneDnnMatmulU8S8::Impl : MatmulPrimitive {
  using MatmulPrimitive::MatmulPrimitive;
};
OneDnnMatmulU8S8::OneDnnMatmulU8S8(int64_t m, int64_t n, int64_t k)
    : impl_(std::make_unique<Impl>(m, n, k, dt::u8, dt::s8, dt::s32)) {}
OneDnnMatmulU8S8::~OneDnnMatmulU8S8() = default;
void OneDnnMatmulU8S8::run(const uint8_t* a, const int8_t* b, int32_t* c) { impl_->run(a, b, c); }

void onednn_gemm_u8s8s32(int64_t m, int64_t n, int64_t k, const uint8_t* a, const int8_t* b, int32_t* c) {
  const int32_t co = 0;
  if (dnnl_gemm_u8s8s32('N', 'N', 'F', m, n, k, 1.f, a, k, 0, b, n, 0, 0.f, c, n, &co) != dnnl_success)
    throw std::runtime_error("dnnl_gemm_u8s8s32 failed");
}

struct OneDnnConv2d::Impl {
  dnnl::stream stream{cpu_engine()};
  dnnl::memory::desc user_src_md, user_dst_md;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  dnnl::memory weights, src, dst;  // in the primitive's layouts
  bool reorder_src = false, reorder_dst = false;
  dnnl::memory last_src;  // the primitive's input in its own layout, from the last run()
  int64_t oh = 0, ow = 0;
  double flops = 0;
};

OneDnnConv2d::OneDnnConv2d(int64_t batch, int64_t in_channels, int64_t height, int64_t width, int64_t out_channels,
                           int64_t kernel, int64_t pad, int64_t stride, const float* weights, int64_t groups)
    : impl_(std::make_unique<Impl>()) {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  auto& e = cpu_engine();
  auto& I = *impl_;
  I.oh = (height + 2 * pad - kernel) / stride + 1;
  I.ow = (width + 2 * pad - kernel) / stride + 1;
  I.flops = 2.0 * batch * out_channels * I.oh * I.ow * (in_channels / groups) * kernel * kernel;
  dnnl::memory::dims src_dims = {batch, in_channels, height, width}, dst_dims = {batch, out_channels, I.oh, I.ow};
  dnnl::memory::dims w_dims =
      groups == 1 ? dnnl::memory::dims{out_channels, in_channels, kernel, kernel}
                  : dnnl::memory::dims{groups, out_channels / groups, in_channels / groups, kernel, kernel};
  I.user_src_md = dnnl::memory::desc(src_dims, dt::f32, tag::nchw);
  I.user_dst_md = dnnl::memory::desc(dst_dims, dt::f32, tag::nchw);
  dnnl::memory::desc user_w_md(w_dims, dt::f32, groups == 1 ? tag::oihw : tag::goihw);
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      dnnl::memory::desc(src_dims, dt::f32, tag::any), dnnl::memory::desc(w_dims, dt::f32, tag::any),
      dnnl::memory::desc(dst_dims, dt::f32, tag::any), {stride, stride}, {pad, pad}, {pad, pad});
  I.pd = dnnl::convolution_forward::primitive_desc(d, e);
  I.prim = dnnl::convolution_forward(I.pd);
  dnnl::memory user_w(user_w_md, e, const_cast<float*>(weights));
  I.weights = dnnl::memory(I.pd.weights_desc(), e);
  dnnl::reorder(user_w, I.weights).execute(I.stream, user_w, I.weights);
  I.stream.wait();
  I.reorder_src = I.pd.src_desc() != I.user_src_md;
  I.reorder_dst = I.pd.dst_desc() != I.user_dst_md;
  I.src = dnnl::memory(I.pd.src_desc(), e);
  I.dst = dnnl::memory(I.pd.dst_desc(), e);
}

std::vector<int> parse_int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) v.push_back(std::stoi(item));
  return v;
}

void OneDnnConv2d::run_native() {
  auto& I = *impl_;
  if (!I.last_src) throw std::logic_error("OneDnnConv2d::run_native before run()");
  I.prim.execute(I.stream, {{DNNL_ARG_SRC, I.last_src}, {DNNL_ARG_WEIGHTS, I.weights}, {DNNL_ARG_DST, I.dst}});
  I.stream.wait();
}

OneDnnConv2d::~OneDnnConv2d() = default;
int64_t OneDnnConv2d::out_height() const { return impl_->oh; }
int64_t OneDnnConv2d::out_width() const { return impl_->ow; }
double OneDnnConv2d::flops() const { return impl_->flops; }

void OneDnnConv2d::run(const float* input, float* output) {
  auto& e = cpu_engine();
  auto& I = *impl_;
  dnnl::memory user_src(I.user_src_md, e, const_cast<float*>(input)), user_dst(I.user_dst_md, e, output);
  dnnl::memory src = I.reorder_src ? I.src : user_src, dst = I.reorder_dst ? I.dst : user_dst;
  if (I.reorder_src) dnnl::reorder(user_src, src).execute(I.stream, user_src, src);
  I.prim.execute(I.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, I.weights}, {DNNL_ARG_DST, dst}});
  if (I.reorder_dst) dnnl::reorder(dst, user_dst).execute(I.stream, dst, user_dst);
  I.last_src = src;
  I.stream.wait();
}

}  // namespace loom::bench
