// Cross-compilation for the boards' Arm CPUs: the target a triple gets (the board's CPU, NEON),
// shared libraries linked by Debian's cross compilers, and what loading one here says.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "codegen_test_util.h"
#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/ir/expr.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/module.h"

namespace loom::test {
namespace {

using namespace loom::ir;
using ::testing::Contains;
using ::testing::HasSubstr;

LoweredFunc saxpy(int n) {
  Buffer X = arg("X", DataType::Float(32), {n}), Y = arg("Y", DataType::Float(32), {n});
  Var i("i");
  const int lanes = 4;
  Expr idx = ramp(i * lanes, 1, lanes);
  DataType vt = DataType::Float(32).with_lanes(lanes);
  Stmt body = for_loop(
      i, 0, n / lanes, ForKind::Serial,
      store(Y, load(vt, X, idx) * broadcast(make_const(DataType::Float(32), 3.0), lanes) + load(vt, Y, idx), idx));
  return {"saxpy", {X, Y}, body};
}

bool on_path(const std::string& program) {
  return std::system(("command -v " + program + " > /dev/null 2>&1").c_str()) == 0;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(LLVMCross, BoardsGetTheirCpuAndNeon) {
  codegen::LLVMOptions a64;
  a64.target_triple = "aarch64-linux-gnu";
  const codegen::TargetInfo t64 = codegen::target_info(a64);
  EXPECT_EQ(t64.triple, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(t64.cpu, "cortex-a53");
  EXPECT_THAT(t64.isa_features, Contains("neon"));
  EXPECT_EQ(t64.vector_bits, 128);
  EXPECT_EQ(t64.vector_registers, 32);
  codegen::LLVMOptions a32;
  a32.target_triple = "armv7a-linux-gnueabihf";
  const codegen::TargetInfo t32 = codegen::target_info(a32);
  EXPECT_EQ(t32.cpu, "cortex-a9");
  EXPECT_THAT(t32.isa_features, Contains("neon"));
  EXPECT_EQ(t32.vector_registers, 16);
  // This machine's target names its own extensions (the ones a model compiled here records).
  const codegen::TargetInfo host = codegen::target_info({});
  EXPECT_EQ(runtime::triple_cpu_arch(host.triple), runtime::this_cpu_arch());
  EXPECT_TRUE(runtime::missing_cpu_features(host.isa_features).empty());
}

TEST(LLVMCross, UnknownCpuOrTripleIsAnError) {
  codegen::LLVMOptions o;
  o.target_triple = "aarch64-linux-gnu";
  o.target_cpu = "cortex-a99";
  EXPECT_THAT(error_text<CodegenError>([&] { codegen::target_info(o); }),
              HasSubstr("'cortex-a99' is not a CPU LLVM knows for aarch64-unknown-linux-gnu"));
  o.target_triple = "sparc9-linux-gnu";
  o.target_cpu = "";
  EXPECT_THAT(error_text<CodegenError>([&] { codegen::target_info(o); }), HasSubstr("sparc9"));
}

// A shared library for each board, linked by its cross compiler: the Arm architecture's code,
// with NEON vector arithmetic, and refused by this process's loader with both names.
TEST(LLVMCross, ExportsLibrariesForTheBoards) {
  struct Board {
    const char* triple;
    const char* compiler;
    const char* arch;
    const char* vector_add;  // a 4 x float NEON instruction in its assembly
  };
  const Board boards[] = {{"aarch64-linux-gnu", "aarch64-linux-gnu-gcc", "aarch64", ".4s, v"},
                          {"armv7a-linux-gnueabihf", "arm-linux-gnueabihf-gcc", "arm", ".f32\tq"}};
  TestDir dir;
  int exported = 0;
  for (const Board& b : boards) {
    SCOPED_TRACE(b.triple);
    codegen::LLVMOptions o;
    o.target_triple = b.triple;
    EXPECT_THAT(codegen::emit_assembly({saxpy(64)}, o), HasSubstr(b.vector_add));
    if (!on_path(b.compiler)) continue;
    const std::string lib = (dir.path() / (std::string(b.arch) + ".so")).string();
    codegen::export_library({saxpy(64)}, lib, o);
    EXPECT_EQ(runtime::elf_cpu_arch(read_bytes(lib)), b.arch);
    if (b.arch != std::string(runtime::this_cpu_arch())) {
      EXPECT_THAT(
          error_text<RuntimeError>([&] { runtime::Module::load(lib); }),
          HasSubstr("it is " + std::string(b.arch) + " code and this process runs on " + runtime::this_cpu_arch()));
    }
    ++exported;
  }
  if (exported < 2) GTEST_SKIP() << "the Arm cross compilers are not installed (crossbuild-essential-arm64/-armhf)";
}

TEST(LLVMCross, NoCrossCompilerKnownIsAnError) {
  codegen::LLVMOptions o;
  o.target_triple = "riscv64-linux-gnu";
  TestDir dir;
  EXPECT_THAT(
      error_text<CodegenError>([&] { codegen::export_library({saxpy(64)}, (dir.path() / "r.so").string(), o); }),
      HasSubstr("no cross C compiler is known for it"));
}

}  // namespace
}  // namespace loom::test
