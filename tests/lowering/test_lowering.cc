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

}  // namespace
}  // namespace loom
