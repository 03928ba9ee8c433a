// Illegal schedules and programs: each must throw a typed error whose message names the culprit.
#include <gtest/gtest.h>

#include "common/workloads.h"
#include "loom/schedule/lower.h"

namespace loom {
namespace {

using namespace loom::ir;
using schedule::Schedule;

// Runs `f`, expects exception type E whose message contains every fragment.
template <typename E, typename F>
void expect_error(F f, std::initializer_list<const char*> fragments) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const E& e) {
    for (auto* frag : fragments) EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

TEST(ScheduleErrors, SplitAxisOfAnotherStage) {
  auto w = test::softmax(4, 8);
  Tensor Y = w.outputs[0];
  Schedule s({Y});
  Tensor mx = Tensor(topo_sort({Y})[1]);
  expect_error<ScheduleError>([&] { s[Y].split(s[mx].axis(0), 2); },
                              {"split", "'i'", "belongs to stage 'row_max'", "'softmax'"});
}

TEST(ScheduleErrors, SplitAlreadySplitAxisAndBadFactor) {
  auto w = test::vector_add(16);
  Schedule s(w.outputs);
  auto C = s[w.outputs[0]];
  IterVar i = C.axis(0);
  C.split(i, 4);
  expect_error<ScheduleError>([&] { C.split(i, 2); }, {"'i'", "already split"});
  auto leaf = C.leaf_iter_vars()[0];
  expect_error<ScheduleError>([&] { C.split(leaf, 0); }, {"factor must be a positive constant"});
}

TEST(ScheduleErrors, ComputeAtIntoNonConsumer) {
  using namespace ir;
  Tensor A = placeholder({8}, DataType::Float(32), "A");
  Tensor B = compute(
      {8}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute(
      {8}, [&](Var i) { return B(i) * 2.0f; }, "C");
  Tensor D = compute(
      {8}, [&](Var i) { return A(i) * 3.0f; }, "D");
  Tensor E = compute(
      {8}, [&](Var i) { return C(i) + D(i); }, "E");
  Schedule s({E});
  s[B].compute_at(s[D], s[D].axis(0));  // D does not read B
  expect_error<ScheduleError>([&] { schedule::lower(s, {A, E}, "f"); }, {"compute_at of 'B'", "'D' does not read it"});
}

TEST(ScheduleErrors, ComputeAtWithOtherReader) {
  using namespace ir;
  Tensor A = placeholder({8}, DataType::Float(32), "A");
  Tensor B = compute(
      {8}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute(
      {8}, [&](Var i) { return B(i) * 2.0f; }, "C");
  Tensor E = compute(
      {8}, [&](Var i) { return C(i) + B(i); }, "E");
  Schedule s({E});
  s[B].compute_at(s[C], s[C].axis(0));
  expect_error<ScheduleError>([&] { schedule::lower(s, {A, E}, "f"); }, {"compute_at of 'B'", "'E' also reads it"});
}

TEST(ScheduleErrors, ComputeAtCycleAndSelf) {
  auto w = test::softmax(4, 8);
  Tensor Y = w.outputs[0];
  Schedule s({Y});
  auto ops = topo_sort({Y});
  Tensor mx(ops[1]), ex(ops[2]);
  expect_error<ScheduleError>([&] { s[ex].compute_at(s[ex], s[ex].axis(0)); }, {"inside itself"});
  expect_error<ScheduleError>([&] { s[Y].compute_at(s[ex], s[ex].axis(0)); }, {"'softmax' is an output"});
  s[mx].compute_at(s[ex], s[ex].axis(0));
  s[ex].compute_at(s[mx], s[mx].axis(0));
  expect_error<ScheduleError>([&] { schedule::lower(s, w.args(), "f"); }, {"cycle"});
}

TEST(ScheduleErrors, IllegalAnnotations) {
  auto w = test::matmul(8, 8, 8);
  Tensor C = w.outputs[0];
  Schedule s({C});
  expect_error<ScheduleError>([&] { s[C].vectorize(s[C].reduce_axis(0)); }, {"vectorize", "'k' is a reduction axis"});
  expect_error<ScheduleError>([&] { s[C].parallel(s[C].reduce_axis(0)); }, {"parallel", "race"});
  expect_error<ScheduleError>([&] { s[C].fuse(s[C].axis(1), s[C].reduce_axis(0)); },
                              {"cannot fuse data-parallel 'j' with reduction 'k'"});
  expect_error<ScheduleError>([&] { s[C].fuse(s[C].axis(0), s[C].reduce_axis(0)); }, {"must be adjacent"});
  expect_error<ScheduleError>([&] { s[C].reorder({s[C].axis(0), s[C].axis(0)}); }, {"appears twice"});
  expect_error<ScheduleError>([&] { s[C].bind(s[C].axis(0), "warpIdx.q"); }, {"unknown thread tag"});
  expect_error<ScheduleError>([&] { s[C].compute_inline(); }, {"'C' is an output"});
  expect_error<ScheduleError>([&] { s[w.inputs[0]].split(s[C].axis(0), 2); }, {"placeholder"});
}

TEST(ScheduleErrors, InlineReductionAndCacheWriteAfterScheduling) {
  using namespace ir;
  auto w = test::matmul(8, 8, 8);
  Tensor C = w.outputs[0];
  Tensor D = compute(
      {8, 8}, [&](Var i, Var j) { return C(i, j) + 1.0f; }, "D");
  Schedule s({D});
  expect_error<ScheduleError>([&] { s[C].compute_inline(); }, {"'C' is a reduction"});
  s[C].split(s[C].axis(0), 2);
  expect_error<ScheduleError>([&] { s.cache_write(C, "local"); },
                              {"cache_write of 'C'", "before the stage is scheduled"});
  expect_error<ScheduleError>([&] { s.cache_read(w.inputs[0], "local", {D}); }, {"'D' does not read it"});
}

TEST(ProgramErrors, MissingArgumentsAndShapes) {
  auto w = test::matmul(8, 8, 8);
  Schedule s(w.outputs);
  expect_error<LoweringError>([&] { schedule::lower(s, {w.inputs[0], w.outputs[0]}, "f"); }, {"'B'", "arguments"});
  expect_error<LoweringError>([&] { schedule::lower(s, {w.inputs[0], w.inputs[1]}, "f"); }, {"output 'C'"});
  expect_error<ShapeError>([&] { w.inputs[0](Expr(1)); }, {"tensor 'A' has rank 2", "1 indices"});
  expect_error<ShapeError>([&] { placeholder({4, 0}, DataType::Float(32), "Z"); }, {"'Z'", "extent 1 is 0"});
  for (int bits : {0, -128}) {
    schedule::LowerOptions o;
    o.vector_bits = bits;
    expect_error<LoweringError>([&] { schedule::lower(s, w.args(), "f", o); },
                                {"LowerOptions::vector_bits is", std::to_string(bits).c_str()});
  }
}

TEST(ProgramErrors, TypeMismatchesNeedExplicitCasts) {
  Tensor A = placeholder({4}, DataType::Int(8), "A");
  Tensor B = placeholder({4}, DataType::Float(32), "B");
  expect_error<TypeError>(
      [&] {
        compute(
            {4}, [&](Var i) { return A(i) + B(i); }, "C");
      },
      {"int8 vs float32", "explicit cast"});
  expect_error<TypeError>([&] { placeholder({4}, DataType::Int(4), "Q"); }, {"'Q'", "unsupported dtype int4"});
  expect_error<TypeError>(
      [&] {
        compute(
            {4}, [&](Var i) { return exp(A(i)); }, "E");
      },
      {"exp", "float"});
  expect_error<TypeError>([&] { DataType::parse("flaot32"); }, {"flaot32"});
  Tensor ok = compute(
      {4}, [&](Var i) { return cast(DataType::Float(32), A(i)) + B(i); }, "ok");
  EXPECT_EQ(ok.dtype(), DataType::Float(32));
}

TEST(ProgramErrors, NonConstantAllocationIsReported) {
  using namespace ir;
  Tensor A = placeholder({16}, DataType::Float(32), "A");
  Tensor idx = placeholder({16}, DataType::Int(32), "idx");
  Tensor B = compute(
      {16}, [&](Var i) { return A(i) * 2.0f; }, "B");
  // A data-dependent read: the region of B needed per iteration is unknown, so bound inference
  // falls back to all of B, which still lowers (and stays correct).
  Tensor C = compute(
      {16}, [&](Var i) { return B(idx(i)); }, "C");
  Schedule s({C});
  s[B].compute_at(s[C], s[C].axis(0));
  auto f = schedule::lower(s, {A, idx, C}, "gather");
  EXPECT_NE(to_string(f).find("allocate B[float32 * 16]"), std::string::npos) << to_string(f);
}

}  // namespace
}  // namespace loom
