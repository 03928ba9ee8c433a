// runtime::Module: argument checks, failure codes, metadata, and loading errors.
#include <gtest/gtest.h>

#include <fstream>

#include "common/temp_dir.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"

using loom::DataType;
using loom::NDArray;
using namespace loom::runtime;

namespace {

extern "C" int32_t fill_ones(void** args) {
  float* out = static_cast<float*>(args[1]);
  for (int i = 0; i < 4; ++i) out[i] = 1.0f + static_cast<const float*>(args[0])[i];
  return 0;
}

extern "C" int32_t always_fails(void**) {
  loom_set_last_error("assertion 'n > 0' failed");
  return -1;
}

Module make_module() {
  FunctionSignature add{"add_one", {{"A", {4}, DataType::Float(32)}, {"B", {4}, DataType::Float(32)}}};
  FunctionSignature bad{"bad", {}};
  return Module({add, bad}, {fill_ones, always_fails}, nullptr);
}

TEST(Module, CallsWithCheckedArguments) {
  Module m = make_module();
  NDArray a = NDArray::zeros({4}, DataType::Float(32)), b = NDArray::zeros({4}, DataType::Float(32));
  a.data<float>()[2] = 41;
  m.call("add_one", {a, b});
  EXPECT_EQ(b.data<float>()[2], 42);
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"add_one", "bad"}));
  EXPECT_EQ(m.signature("add_one").args[1].str(), "float32[4]");
}

TEST(Module, RejectsMismatchedArguments) {
  Module m = make_module();
  NDArray f4 = NDArray::zeros({4}, DataType::Float(32));
  try {
    m.call("add_one", {f4, NDArray::zeros({2, 2}, DataType::Float(32))});
    FAIL() << "expected ShapeError";
  } catch (const loom::ShapeError& e) {
    EXPECT_STREQ(e.what(), "add_one: argument 'B' expects float32[4], got float32[2, 2]");
  }
  try {
    m.call("add_one", {NDArray::zeros({4}, DataType::Int(32)), f4});
    FAIL() << "expected TypeError";
  } catch (const loom::TypeError& e) {
    EXPECT_STREQ(e.what(), "add_one: argument 'A' expects float32[4], got int32[4]");
  }
  try {
    m.call("add_one", {f4});
    FAIL() << "expected ShapeError";
  } catch (const loom::ShapeError& e) {
    EXPECT_STREQ(e.what(), "add_one: expects 2 arguments, got 1");
  }
  EXPECT_THROW(m.call("nope", {}), loom::RuntimeError);
}

TEST(Module, FailureCodeBecomesRuntimeError) {
  Module m = make_module();
  try {
    m.call("bad", {});
    FAIL() << "expected RuntimeError";
  } catch (const loom::RuntimeError& e) {
    EXPECT_STREQ(e.what(), "bad: assertion 'n > 0' failed (code -1)");
  }
}

TEST(Module, MetadataRoundTrip) {
  std::vector<FunctionSignature> sigs = {{"f", {{"X", {2, 3}, DataType::Int(8)}, {"Y", {6}, DataType::Float(16)}}}};
  auto back = signatures_from_json(signatures_to_json(sigs), "test");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].name, "f");
  EXPECT_EQ(back[0].args[0].str(), "int8[2, 3]");
  EXPECT_EQ(back[0].args[1].str(), "float16[6]");
  EXPECT_THROW(signatures_from_json("{not json", "test"), loom::RuntimeError);
}

TEST(Module, LoadReportsBadFiles) {
  try {
    Module::load("/nonexistent/lib.so");
    FAIL() << "expected RuntimeError";
  } catch (const loom::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("'/nonexistent/lib.so'"), std::string::npos) << e.what();
  }
  loom::test::TestDir dir;
  std::string path = dir.file("not_a_library.so");
  std::ofstream(path) << "hello";
  try {
    Module::load(path);
    FAIL() << "expected RuntimeError";
  } catch (const loom::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
