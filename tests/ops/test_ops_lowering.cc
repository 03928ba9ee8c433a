// The operator library's tuned CPU schedules, checked through the loop-IR interpreter against
// the naive reference (small shapes; the codegen tests run them compiled).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/ir/printer.h"
#include "loom/ops/cpu_schedules.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;

void run_and_compare(const schedule::Schedule& s, const std::vector<Tensor>& inputs, const Tensor& out, const char* name) {
  std::vector<Tensor> args = inputs;
  args.push_back(out);
  LoweredFunc f = schedule::lower(s, args, name);
  std::vector<NDArray> arrays;
  std::map<const Operation*, NDArray> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    arrays.push_back(test::random_array(inputs[i], 10 + i));
    in[inputs[i].op().get()] = arrays.back();
  }
  arrays.push_back(test::empty_like(out));
  interpret(f, arrays);
  EXPECT_TRUE(test::arrays_close(arrays.back(), reference_eval({out}, in)[0], 1e-4, 1e-4)) << to_string(f);
}

TEST(OpsLowering, PackedGemmSchedule) {
  Tensor A = placeholder({16, 24}, DataType::Float(32), "A");
  Tensor B = placeholder({24, 64}, DataType::Float(32), "B");
  Tensor C = ops::matmul_packed(A, B, 32);
  schedule::Schedule s({C});
  ops::schedule_matmul_packed_cpu(s, C, {8, 32, 256});
  run_and_compare(s, {A, B}, C, "gemm");
}

TEST(OpsLowering, PackedConvSchedule) {
  Tensor X = placeholder({1, 4, 8, 8}, DataType::Float(32), "X");
  Tensor W = placeholder({16, 4, 3, 3}, DataType::Float(32), "W");
  Tensor Y = ops::conv2d_nchw_packed(X, W, 1, 1, 8);
  schedule::Schedule s({Y});
  ops::schedule_conv2d_nchw_cpu(s, Y, 8, 4);
  run_and_compare(s, {X, W}, Y, "conv");
}

TEST(OpsLowering, ShapeErrorsNameTheTensors) {
  Tensor A = placeholder({4, 5}, DataType::Float(32), "A");
  Tensor B = placeholder({6, 7}, DataType::Float(32), "B");
  try {
    ops::matmul(A, B, "mm");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'A' has 5, 'B' has 6"), std::string::npos) << e.what();
  }
  Tensor X = placeholder({1, 3, 8, 8}, DataType::Float(32), "X");
  Tensor W = placeholder({4, 2, 3, 3}, DataType::Float(32), "W");
  EXPECT_THROW(ops::conv2d_nchw(X, W, 1, 1), ShapeError);
}

}  // namespace
}  // namespace loom
