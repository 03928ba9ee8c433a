// Lowering correctness: every workload under several schedules, run through the loop-IR
// interpreter and compared with the naive tensor-expression reference.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "common/workloads.h"
#include "loom/ir/printer.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;
using test::Workload;

void check(const Schedule& s, const Workload& w, const char* name) {
  LoweredFunc f = schedule::lower(s, w.args(), name);
  std::map<const Operation*, NDArray> in;
  std::vector<NDArray> arrays;
  uint64_t seed = 1;
  for (auto& t : w.inputs) {
    arrays.push_back(test::random_array(t, seed++));
    in[t.op().get()] = arrays.back();
  }
  for (auto& t : w.outputs) arrays.push_back(test::empty_like(t));
  interpret(f, arrays);
  auto want = reference_eval(w.outputs, in);
  for (size_t i = 0; i < w.outputs.size(); ++i)
    EXPECT_TRUE(test::arrays_close(arrays[w.inputs.size() + i], want[i], 1e-4, 1e-4)) << to_string(f);
}

TEST(Lowering, VectorAddSchedules) {
  for (int variant = 0; variant < 4; ++variant) {
    auto w = test::vector_add(37);
    Schedule s(w.outputs);
    auto C = s[w.outputs[0]];
    if (variant == 1) C.split(C.axis(0), 8);
    if (variant == 2) {
      auto [o, i] = C.split(C.axis(0), 4);
      C.vectorize(i);
      C.parallel(o);
    }
    if (variant == 3) {
      auto [o, i] = C.split_nparts(C.axis(0), 3);
      C.unroll(i);
    }
    SCOPED_TRACE(variant);
    check(s, w, "vadd");
  }
}

TEST(Lowering, VectorAddIntegerTypes) {
  for (DataType t : {DataType::Int(8), DataType::Int(16), DataType::Int(32), DataType::Float(16)}) {
    auto w = test::vector_add(64, t);
    Schedule s(w.outputs);
    auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(0), 16);
    s[w.outputs[0]].vectorize(i);
    SCOPED_TRACE(t.str());
    check(s, w, "vadd");
  }
}

TEST(Lowering, MatmulSplitReorderComputeAt) {
  auto w = test::matmul(16, 20, 12);
  Tensor C = w.outputs[0];
  Schedule s({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 4);
  auto [jo, ji] = s[C].split(s[C].axis(1), 3);  // non-divisible
  auto [ko, ki] = s[C].split(s[C].reduce_axis(0), 5);  // non-divisible reduction
  s[C].reorder({io, jo, ko, ii, ki, ji});
  Tensor AL = s.cache_read(w.inputs[0], "local", {C});
  s[AL].compute_at(s[C], ko);
  s[C].vectorize(ji);
  check(s, w, "matmul");
}

TEST(Lowering, MatmulTileFuseParallelCacheWrite) {
  auto w = test::matmul(32, 32, 16);
  Tensor C = w.outputs[0];
  Schedule s({C});
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
  check(s, w, "matmul");
}

TEST(Lowering, Conv2dSchedules) {
  for (int variant = 0; variant < 3; ++variant) {
    auto w = test::conv2d_nchw(1, 3, 9, 4, 3, variant == 2 ? 2 : 1, 1);
    Tensor Y = w.outputs[0];
    Schedule s({Y});
    Tensor P = Y.op()->input_tensors()[0];
    if (variant == 0) s[P].compute_inline();
    if (variant == 1) {
      auto [yo, yi] = s[Y].split(s[Y].axis(2), 4);
      s[P].compute_at(s[Y], yo);
      s[Y].vectorize(s[Y].axis(3));
    }
    if (variant == 2) {
      auto ax = s[Y].fuse(s[Y].axis(0), s[Y].axis(1));
      s[Y].parallel(ax);
    }
    SCOPED_TRACE(variant);
    check(s, w, "conv2d");
  }
}

TEST(Lowering, MaxPoolAndRelu) {
  {
    auto w = test::max_pool2d(3, 10, 3, 2);
    Schedule s(w.outputs);
    auto [o, i] = s[w.outputs[0]].split(s[w.outputs[0]].axis(2), 2);
    s[w.outputs[0]].vectorize(i);
    check(s, w, "pool");
  }
  {
    auto w = test::relu(5, 33);
    Schedule s(w.outputs);
    auto Y = s[w.outputs[0]];
    auto [o, i] = Y.split(Y.axis(1), 8);
    Y.vectorize(i);
    Y.parallel(Y.axis(0));
    check(s, w, "relu");
  }
}

TEST(Lowering, SoftmaxStages) {
  for (int variant = 0; variant < 2; ++variant) {
    auto w = test::softmax(4, 19);
    Tensor Y = w.outputs[0];
    Schedule s({Y});
    auto ops = topo_sort({Y});  // X, row_max, exp, row_sum, softmax
    if (variant == 1) {
      s[Tensor(ops[2])].compute_at(s[Y], s[Y].axis(0));
      s[Tensor(ops[1])].compute_at(s[Y], s[Y].axis(0));
      s[Tensor(ops[3])].compute_at(s[Y], s[Y].axis(0));
    }
    SCOPED_TRACE(variant);
    check(s, w, "softmax");
  }
}

}  // namespace
}  // namespace loom
