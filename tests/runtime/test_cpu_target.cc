// The CPU-target check of a compiled model's kernel library: architectures read from ELF headers
// and triples, the refusal of another architecture's code naming both, and the extensions this
// CPU lacks, against the compiler's own __builtin_cpu_supports on x86.
#include "loom/runtime/cpu_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "common/error_text.h"
#include "loom/runtime/error.h"
#include "loom/runtime/executor_graph.h"

namespace loom::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The first bytes of a little-endian 64-bit ELF shared object for `machine` (e_machine).
std::string elf_header(unsigned machine) {
  std::string h(64, '\0');
  h.replace(0, 4,
            "\x7f"
            "ELF");
  h[4] = 2;   // 64-bit
  h[5] = 1;   // little-endian
  h[16] = 3;  // ET_DYN
  h[18] = char(machine & 0xff);
  h[19] = char(machine >> 8);
  return h;
}

TEST(CpuTarget, ElfMachines) {
  EXPECT_EQ(runtime::elf_cpu_arch(elf_header(62)), "x86_64");
  EXPECT_EQ(runtime::elf_cpu_arch(elf_header(183)), "aarch64");
  EXPECT_EQ(runtime::elf_cpu_arch(elf_header(40)), "arm");
  EXPECT_EQ(runtime::elf_cpu_arch(elf_header(9999)), "ELF machine 9999");
  EXPECT_EQ(runtime::elf_cpu_arch("not an ELF file at all"), "");
  EXPECT_EQ(runtime::elf_cpu_arch(elf_header(62).substr(0, 10)), "");  // truncated
}

TEST(CpuTarget, ThisProcessIsWhatItsOwnExecutableSays) {
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(exe)), std::istreambuf_iterator<char>());
  EXPECT_EQ(runtime::elf_cpu_arch(bytes), runtime::this_cpu_arch());
}

TEST(CpuTarget, ArchitectureOfTriples) {
  EXPECT_EQ(runtime::triple_cpu_arch("aarch64-unknown-linux-gnu"), "aarch64");
  EXPECT_EQ(runtime::triple_cpu_arch("arm64-apple-darwin"), "aarch64");
  EXPECT_EQ(runtime::triple_cpu_arch("armv7a-linux-gnueabihf"), "arm");
  EXPECT_EQ(runtime::triple_cpu_arch("thumbv7-unknown-linux-gnueabihf"), "arm");
  EXPECT_EQ(runtime::triple_cpu_arch("x86_64-pc-linux-gnu"), "x86_64");
  EXPECT_EQ(runtime::triple_cpu_arch("i686-linux-gnu"), "i386");
  EXPECT_EQ(runtime::triple_cpu_arch("riscv64-linux-gnu"), "riscv64");
}

// A model whose kernels are another architecture's: refused before loading, naming both.
TEST(CpuTarget, RefusesAnotherArchitectureNamingBoth) {
  const bool x86 = std::string(runtime::this_cpu_arch()) == "x86_64";
  const std::string other = x86 ? "aarch64" : "x86_64";
  const std::string triple = x86 ? "aarch64-unknown-linux-gnu" : "x86_64-unknown-linux-gnu";
  const std::string msg = error_text<ModelError>(
      [&] { runtime::check_cpu_target(elf_header(x86 ? 183 : 62), triple, "cortex-a53", {"neon"}, "board.loom"); });
  EXPECT_THAT(msg, AllOf(HasSubstr("board.loom: its CPU kernels were compiled for " + triple + ", cpu cortex-a53"),
                         HasSubstr("this runtime runs on " + std::string(runtime::this_cpu_arch())),
                         HasSubstr("run it on an " + other + " machine"), HasSubstr("--host-target")));
  // A file from before the triple was recorded: the library's own header says the same.
  EXPECT_THAT(
      error_text<ModelError>([&] { runtime::check_cpu_target(elf_header(x86 ? 183 : 62), "", "", {}, "old.loom"); }),
      HasSubstr("old.loom: its CPU kernels were compiled for " + other));
}

TEST(CpuTarget, LibraryAndGraphMustAgree) {
  const std::string here = runtime::this_cpu_arch();
  EXPECT_THAT(error_text<ModelError>([&] {
                runtime::check_cpu_target(elf_header(here == "x86_64" ? 62 : 183), "armv7a-linux-gnueabihf", "", {},
                                          "m.loom");
              }),
              HasSubstr("m.loom: the kernel library is " + here +
                        " code, but the executor graph says it was compiled for armv7a-linux-gnueabihf"));
  EXPECT_THAT(error_text<ModelError>([&] { runtime::check_cpu_target("#!/bin/sh\n", "", "", {}, "m.loom"); }),
              HasSubstr("m.loom: the kernel library is not an ELF shared object"));
  // No library (a GPU-only model) and this machine's own code pass.
  EXPECT_NO_THROW(runtime::check_cpu_target("", "", "", {}, "m.loom"));
}

#if defined(__x86_64__)
// Each extension the runtime checks, against what GCC's runtime says of this CPU.
TEST(CpuTarget, MissingExtensionsAgreeWithTheCompiler) {
  struct Known {
    const char* name;
    bool has;
  };
  __builtin_cpu_init();
  const Known known[] = {
      {"sse3", bool(__builtin_cpu_supports("sse3"))},
      {"ssse3", bool(__builtin_cpu_supports("ssse3"))},
      {"sse4.1", bool(__builtin_cpu_supports("sse4.1"))},
      {"sse4.2", bool(__builtin_cpu_supports("sse4.2"))},
      {"avx", bool(__builtin_cpu_supports("avx"))},
      {"avx2", bool(__builtin_cpu_supports("avx2"))},
      {"fma", bool(__builtin_cpu_supports("fma"))},
      {"f16c", bool(__builtin_cpu_supports("f16c"))},
      {"avx512f", bool(__builtin_cpu_supports("avx512f"))},
      {"avx512dq", bool(__builtin_cpu_supports("avx512dq"))},
      {"avx512cd", bool(__builtin_cpu_supports("avx512cd"))},
      {"avx512bw", bool(__builtin_cpu_supports("avx512bw"))},
      {"avx512vl", bool(__builtin_cpu_supports("avx512vl"))},
      {"avx512vbmi", bool(__builtin_cpu_supports("avx512vbmi"))},
      {"avx512vnni", bool(__builtin_cpu_supports("avx512vnni"))},
      {"avx512bf16", bool(__builtin_cpu_supports("avx512bf16"))},
      {"avx512fp16", bool(__builtin_cpu_supports("avx512fp16"))},
      {"avxvnni", bool(__builtin_cpu_supports("avxvnni"))},
      {"amx-tile", bool(__builtin_cpu_supports("amx-tile"))},
      {"amx-int8", bool(__builtin_cpu_supports("amx-int8"))},
      {"amx-bf16", bool(__builtin_cpu_supports("amx-bf16"))},
  };
  ASSERT_EQ(runtime::checked_cpu_features("x86_64").size(), std::size(known));
  std::string lacking;
  for (const Known& k : known) {
    SCOPED_TRACE(k.name);
    EXPECT_EQ(runtime::missing_cpu_features({k.name}).empty(), k.has);
    if (!k.has && lacking.empty()) lacking = k.name;
  }
  EXPECT_TRUE(runtime::missing_cpu_features({"no-such-extension", "neon"}).empty());  // unknown here: not judged
  if (lacking.empty()) GTEST_SKIP() << "this CPU has every extension the runtime checks";
  EXPECT_THAT(error_text<ModelError>([&] {
                runtime::check_cpu_target(elf_header(62), "x86_64-unknown-linux-gnu", "sapphirerapids",
                                          {"avx2", lacking}, "amx.loom");
              }),
              HasSubstr("amx.loom: its CPU kernels were compiled for x86_64-unknown-linux-gnu, cpu sapphirerapids and "
                        "use " +
                        lacking + ", which this CPU lacks"));
}
#endif

TEST(CpuTarget, ExecutorGraphRecordsTheTarget) {
  runtime::ExecutorGraph g;
  g.model = "m";
  g.target = "cortex-a53";
  g.target_triple = "aarch64-unknown-linux-gnu";
  g.target_features = {"neon", "dotprod"};
  const runtime::ExecutorGraph back = runtime::ExecutorGraph::from_json(g.to_json(), 0, "m.loom");
  EXPECT_EQ(back.target_triple, g.target_triple);
  EXPECT_EQ(back.target_features, g.target_features);
  EXPECT_THAT(error_text<ModelError>([&] {
                std::string text = g.to_json();
                text.replace(text.find("[\"neon\",\"dotprod\"]"), 18, "7");
                runtime::ExecutorGraph::from_json(text, 0, "m.loom");
              }),
              HasSubstr("m.loom: malformed executor graph"));
}

}  // namespace
}  // namespace loom::test
