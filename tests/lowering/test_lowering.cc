// Lowering correctness: every workload under several schedules, run through the loop-IR
// interpreter and compared with the naive tensor-expression reference.
#include <gtest/gtest.h>

#include "common/scheduled_cases.h"
#include "common/test_util.h"
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

class LoweringCase : public ::testing::TestWithParam<size_t> {};

TEST_P(LoweringCase, InterpretedMatchesReference) {
  const auto& info = test::scheduled_cases()[GetParam()];
  auto c = info.build();
  check(*c.schedule, c.workload, info.name.c_str());
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, LoweringCase, ::testing::Range<size_t>(0, test::scheduled_cases().size()),
                         [](const auto& p) { return test::scheduled_cases()[p.param].name; });

// A stage computed at a loop whose readers are computed deeper inside it (what the fused
// Winograd convolution does): B at the rows of Y is read by a local accumulator computed in a
// tile of M (itself at the rows of Y), and M by Z, computed at a loop of Y inside the rows.
// Each produces one row, and the loops equal the reference.
TEST(Lowering, ProducersReadFromDeeperInsideTheirLoop) {
  Tensor A = placeholder({6, 12}, DataType::Float(32), "A"), W = placeholder({12, 12}, DataType::Float(32), "W");
  Tensor B = compute(
      {6, 12}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "B");
  IterVar k = reduce_axis(12, "k");
  Tensor M = compute(
      {6, 12}, [&](Var i, Var j) { return sum(B(i, k) * W(k, j), {k}); }, "M");
  Tensor Z = compute(
      {6, 12}, [&](Var i, Var j) { return M(i, j) + 1.0f; }, "Z");
  Tensor Y = compute(
      {6, 12}, [&](Var i, Var j) { return Z(i, j) * B(i, j); }, "Y");
  Schedule s({Y});
  auto [jo, ji] = s[Y].split(s[Y].axis(1), 4);
  Tensor acc = s.cache_write(M, "local");
  auto [mo, mi] = s[M].split(s[M].axis(1), 3);
  s[B].compute_at(s[Y], s[Y].axis(0));
  s[M].compute_at(s[Y], s[Y].axis(0));
  s[acc].compute_at(s[M], mo);
  s[Z].compute_at(s[Y], jo);
  check(s, Workload{{A, W}, {Y}}, "nested_readers");
  std::string ir = to_string(schedule::lower(s, {A, W, Y}, "nested_readers"));
  EXPECT_NE(ir.find("allocate B[float32 * 12]"), std::string::npos) << ir;  // one row
  EXPECT_NE(ir.find("allocate M[float32 * 12]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("allocate Z[float32 * 4]"), std::string::npos) << ir;  // one column tile
}

}  // namespace
}  // namespace loom
