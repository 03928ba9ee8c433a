#include "common/scheduled_cases.h"

namespace loom::test {

using namespace loom::ir;
using schedule::Schedule;

namespace {

ScheduledCase make(Workload w, const std::function<void(Schedule&, const Workload&)>& sched) {
  ScheduledCase c{std::move(w), nullptr};
  c.schedule = std::make_unique<Schedule>(c.workload.outputs);
  sched(*c.schedule, c.workload);
  return c;
}

CaseInfo vadd(std::string name, DataType t, std::function<void(Schedule&, const Workload&)> sched) {
  return {std::move(name), [t, sched] { return make(vector_add(37, t), sched); }};
}

// Splits the output's only axis by `factor` and vectorizes the inner part.
std::function<void(Schedule&, const Workload&)> split_vectorize(int factor) {
  return [factor](Schedule& s, const Workload& w) {
    auto C = s[w.outputs[0]];
    auto [o, i] = C.split(C.axis(0), factor);
    C.vectorize(i);
  };
}

}  // namespace

const std::vector<CaseInfo>& scheduled_cases() {
  static const std::vector<CaseInfo> cases = {
      vadd("vadd_default", DataType::Float(32), [](Schedule&, const Workload&) {}),
      vadd("vadd_split", DataType::Float(32),
           [](Schedule& s, const Workload& w) { s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 8); }),
      vadd("vadd_vector_parallel", DataType::Float(32),
           [](Schedule& s, const Workload& w) {
             auto C = s[w.outputs[0]];
             auto [o, i] = C.split(C.axis(0), 4);
             C.vectorize(i);
             C.parallel(o);
           }),
      vadd("vadd_nparts_unroll", DataType::Float(32),
           [](Schedule& s, const Workload& w) {
             auto C = s[w.outputs[0]];
             auto [o, i] = C.split_nparts(C.axis(0), 3);
             C.unroll(i);
           }),
      vadd("vadd_int8_vector", DataType::Int(8), split_vectorize(16)),
      vadd("vadd_int16", DataType::Int(16), [](Schedule&, const Workload&) {}),
      vadd("vadd_int32_vector", DataType::Int(32), split_vectorize(8)),
      vadd("vadd_fp16_vector", DataType::Float(16), split_vectorize(8)),
      {"matmul_default", [] { return make(matmul(16, 20, 12), [](Schedule&, const Workload&) {}); }},
      {"matmul_split_reorder_cache_read",
       [] {
         return make(matmul(16, 20, 12), [](Schedule& s, const Workload& w) {
           Tensor C = w.outputs[0];
           auto [io, ii] = s[C].split(s[C].axis(0), 4);
           auto [jo, ji] = s[C].split(s[C].axis(1), 3);
           auto [ko, ki] = s[C].split(s[C].reduce_axis(0), 5);
           s[C].reorder({io, jo, ko, ii, ki, ji});
           Tensor AL = s.cache_read(w.inputs[0], "local", {C});
           s[AL].compute_at(s[C], ko);
           s[C].vectorize(ji);
         });
       }},
      {"matmul_tile_fuse_parallel_cache_write",
       [] {
         return make(matmul(32, 32, 16), [](Schedule& s, const Workload& w) {
           Tensor C = w.outputs[0];
           Tensor CL = s.cache_write(C, "local");
           auto t = s[C].tile(s[C].axis(0), s[C].axis(1), 8, 8);
           IterVar f = s[C].fuse(t[0], t[1]);
           s[C].parallel(f);
           s[C].vectorize(t[3]);
           s[CL].compute_at(s[C], f);
           auto [ko, ki] = s[CL].split(s[CL].reduce_axis(0), 4);
           s[CL].reorder({s[CL].axis(0), ko, ki, s[CL].axis(1)});
           s[CL].vectorize(s[CL].axis(1));
           s[CL].unroll(ki);
         });
       }},
      {"conv2d_inline_pad",
       [] {
         return make(conv2d_nchw(1, 3, 9, 4, 3, 1, 1), [](Schedule& s, const Workload& w) {
           s[Tensor(w.outputs[0].op()->input_tensors()[0])].compute_inline();
         });
       }},
      {"conv2d_pad_at_row_block",
       [] {
         return make(conv2d_nchw(1, 3, 9, 4, 3, 1, 1), [](Schedule& s, const Workload& w) {
           Tensor Y = w.outputs[0];
           auto [yo, yi] = s[Y].split(s[Y].axis(2), 4);
           s[Tensor(Y.op()->input_tensors()[0])].compute_at(s[Y], yo);
           s[Y].vectorize(s[Y].axis(3));
         });
       }},
      {"conv2d_stride2_parallel",
       [] {
         return make(conv2d_nchw(2, 3, 9, 4, 3, 2, 1), [](Schedule& s, const Workload& w) {
           Tensor Y = w.outputs[0];
           s[Y].parallel(s[Y].fuse(s[Y].axis(0), s[Y].axis(1)));
         });
       }},
      {"maxpool_vector",
       [] {
         return make(max_pool2d(3, 10, 3, 2), [](Schedule& s, const Workload& w) {
           auto Y = s[w.outputs[0]];
           auto [o, i] = Y.split(Y.axis(2), 2);
           Y.vectorize(i);
         });
       }},
      {"maxpool_int8",
       [] { return make(max_pool2d(2, 8, 2, 2, DataType::Int(8)), [](Schedule&, const Workload&) {}); }},
      {"relu_vector_parallel",
       [] {
         return make(relu(5, 33), [](Schedule& s, const Workload& w) {
           auto Y = s[w.outputs[0]];
           auto [o, i] = Y.split(Y.axis(1), 8);
           Y.vectorize(i);
           Y.parallel(Y.axis(0));
         });
       }},
      {"softmax_root", [] { return make(softmax(4, 19), [](Schedule&, const Workload&) {}); }},
      {"softmax_compute_at_row",
       [] {
         return make(softmax(4, 19), [](Schedule& s, const Workload& w) {
           Tensor Y = w.outputs[0];
           auto ops = topo_sort({Y});  // X, row_max, exp, row_sum, softmax
           for (int k : {2, 1, 3}) s[Tensor(ops[k])].compute_at(s[Y], s[Y].axis(0));
           s[Y].parallel(s[Y].axis(0));
         });
       }},
  };
  return cases;
}

}  // namespace loom::test
