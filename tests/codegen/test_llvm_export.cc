// export_library writes a shared library that runtime::Module::load reads back.
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include "codegen_test_util.h"
#include "common/temp_dir.h"
#include "loom/ir/expr.h"
#include "loom/runtime/thread_pool.h"

namespace loom::test {
namespace {

using namespace loom::ir;

TEST(LLVMExport, RoundTripThroughSharedLibrary) {
  const int n = 96;
  DataType f32 = DataType::Float(32);
  Buffer A = arg("A", f32, {n, 32}), B = arg("B", f32, {n, 32}), C = arg("C", f32, {n, 32});
  Var i("i"), j("j");
  Expr idx = ramp(i * 32 + j * 16, 1, 16);
  DataType v16 = f32.with_lanes(16);
  // A parallel loop: the library references loom_parallel_for, resolved from this process.
  Stmt add = for_loop(i, 0, n, ForKind::Parallel,
                      for_loop(j, 0, 2, ForKind::Serial, store(C, load(v16, A, idx) + exp(load(v16, B, idx)), idx)));
  LoweredFunc f{"exported_add", {A, B, C}, add};
  Buffer X = arg("X", DataType::Int(8), {5}), Y = arg("Y", DataType::Int(8), {5});
  Var k("k");
  LoweredFunc g{"negate_i8", {X, Y}, for_loop(k, 0, 5, ForKind::Serial, store(Y, -load(DataType::Int(8), X, k), k))};

  test::TestDir dir;
  std::string path = dir.file("loom_export_test.so");
  std::filesystem::remove(path);
  codegen::export_library({f, g}, path);
  ASSERT_TRUE(std::filesystem::exists(path));

  runtime::Module m = runtime::Module::load(path);
  EXPECT_EQ(m.function_names(), (std::vector<std::string>{"exported_add", "negate_i8"}));
  EXPECT_EQ(m.signature("exported_add").args[2].str(), "float32[96, 32]");
  EXPECT_EQ(m.signature("negate_i8").args[0].name, "X");

  runtime::set_num_threads(2);
  auto args = random_args(f, 9, -2, 2);
  auto want = deep_copy(args);
  m.call("exported_add", args);
  interpret(f, want);
  EXPECT_TRUE(arrays_close(args[2], want[2]));
  runtime::set_num_threads(0);

  NDArray x = NDArray::empty({5}, DataType::Int(8)), y = NDArray::zeros({5}, DataType::Int(8));
  for (int q = 0; q < 5; ++q) x.data<int8_t>()[q] = static_cast<int8_t>(q == 0 ? -128 : q * 10);
  m.call("negate_i8", {x, y});
  EXPECT_EQ(y.data<int8_t>()[0], -128);  // wraps
  EXPECT_EQ(y.data<int8_t>()[3], -30);
  // Argument checks apply to loaded modules too.
  EXPECT_THROW(m.call("negate_i8", {x}), ShapeError);
}

// With lld's library the host's kernel libraries link in this process: no child process runs
// (the page faults of waited-for children stay as they were), and a kernel that calls libgcc's
// half-float conversions (a CPU without F16C) gets them linked in.
TEST(LLVMExport, HostLibrariesLinkInThisProcess) {
#ifndef LOOM_TEST_HAVE_LLD
  GTEST_SKIP() << "built without lld's library (liblld-19-dev): host libraries link with ld";
#endif
  DataType f16 = DataType::Float(16);
  Buffer A = arg("A", f16, {16}), B = arg("B", f16, {16});
  Var i("i");
  LoweredFunc f{"half_exp", {A, B}, for_loop(i, 0, 16, ForKind::Serial, store(B, exp(load(f16, A, i)), i))};
  codegen::LLVMOptions options;
  options.target_cpu = "x86-64";  // no F16C: conversions are libgcc calls
  test::TestDir dir;
  const std::string path = dir.file("loom_in_process_link.so");
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  codegen::export_library({f}, path, options);
  getrusage(RUSAGE_CHILDREN, &after);
  EXPECT_EQ(after.ru_minflt, before.ru_minflt) << "a linker process ran";
  // libgcc's conversions are in the library, not left to the process (libgcc_s may lack them).
  std::string undefined;
  if (FILE* nm = popen(("nm -D --undefined-only " + path).c_str(), "r")) {
    char line[256];
    while (fgets(line, sizeof line, nm)) undefined += line;
    pclose(nm);
  }
  EXPECT_NE(undefined.find("expf"), std::string::npos) << undefined;  // nm ran: libm's exp is left to libm
  EXPECT_EQ(undefined.find("hfsf2"), std::string::npos) << undefined;
  EXPECT_EQ(undefined.find("sfhf2"), std::string::npos) << undefined;
  runtime::Module m = runtime::Module::load(path);
  auto args = random_args(f, 3, -2, 2);
  auto want = deep_copy(args);
  m.call("half_exp", args);
  interpret(f, want);
  EXPECT_TRUE(arrays_close(args[1], want[1], 1e-2));
}

TEST(LLVMExport, LoadingALibraryWithoutMetadataFails) {
  try {
    runtime::Module::load("libm.so.6");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("__loom_module_metadata"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::test
