// Lowering correctness: every workload under several schedules, run through the loop-IR
// interpreter and compared with the naive tensor-expression reference.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "loom/ir/printer.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;

void check(const Schedule& s, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, const char* name) {
  std::vector<Tensor> args = inputs;
  args.insert(args.end(), outputs.begin(), outputs.end());
  LoweredFunc f = schedule::lower(s, args, name);
  std::map<const Operation*, NDArray> in;
  std::vector<NDArray> arrays;
  uint64_t seed = 1;
  for (auto& t : inputs) {
    arrays.push_back(test::random_array(t, seed++));
    in[t.op().get()] = arrays.back();
  }
  for (auto& t : outputs) arrays.push_back(test::empty_like(t));
  interpret(f, arrays);
  auto want = reference_eval(outputs, in);
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_TRUE(test::arrays_close(arrays[inputs.size() + i], want[i])) << to_string(f);
}

TEST(Lowering, MatmulSplitReorderComputeAt) {
  Tensor A = placeholder({16, 12}, DataType::Float(32), "A");
  Tensor B = placeholder({12, 20}, DataType::Float(32), "B");
  IterVar k = reduce_axis(12, "k");
  Tensor C = compute({16, 20}, [&](Var i, Var j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s({C});
  auto [io, ii] = s[C].split(s[C].axis(0), 4);
  auto [jo, ji] = s[C].split(s[C].axis(1), 3);  // non-divisible
  auto [ko, ki] = s[C].split(k, 5);             // non-divisible reduction
  s[C].reorder({io, jo, ko, ii, ki, ji});
  Tensor AL = s.cache_read(A, "local", {C});
  s[AL].compute_at(s[C], ko);
  s[C].vectorize(ji);
  check(s, {A, B}, {C}, "matmul");
}

}  // namespace
}  // namespace loom
