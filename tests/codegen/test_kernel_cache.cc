// The kernel cache (codegen/llvm.h): the second compile of the same kernels is a hit that gives
// the same object code (a byte-identical library) and the same results as the interpreter; the
// target and options are part of the key, the kernel's name and its buffers' names are not, so a
// kernel another library also has is compiled once; a damaged entry is compiled again; "off" and
// an unwritable folder compile as if there were no cache; a bad size bound is an error naming it.
#include <filesystem>
#include <fstream>

#include "codegen_test_util.h"
#include "common/error_text.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "loom/ir/expr.h"

namespace loom::test {
namespace {

using namespace loom::ir;
namespace fs = std::filesystem;

LoweredFunc scaled_add(const std::string& name, float scale = 3.0f, const std::string& buffers = "ABC") {
  const int n = 64;
  DataType f32 = DataType::Float(32);
  Buffer A = arg(buffers.substr(0, 1), f32, {n}), B = arg(buffers.substr(1, 1), f32, {n}),
         C = arg(buffers.substr(2, 1), f32, {n});
  Var i("i");
  return {name, {A, B, C}, for_loop(i, 0, n, ForKind::Serial, store(C, load(f32, A, i) * scale + load(f32, B, i), i))};
}

// f called through `m` under `name` equals the interpreter.
bool runs_like_interpreter(runtime::Module& m, const LoweredFunc& f, const std::string& name, uint64_t seed) {
  auto args = random_args(f, seed), want = deep_copy(args);
  m.call(name, args);
  interpret(f, want);
  return arrays_close(args[2], want[2]);
}

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int entries(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) n += it->path().extension() == ".o";
  return n;
}

TEST(KernelCache, ASecondCompileIsAHitWithTheSameCode) {
  TestDir dir;
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  EXPECT_EQ(codegen::kernel_cache_directory(), fs::path(dir.file("cache")));
  const LoweredFunc f = scaled_add("scaled_add_hit");

  auto before = codegen::kernel_cache_stats();
  codegen::export_library({f}, dir.file("first.so"));
  auto after_first = codegen::kernel_cache_stats();
  EXPECT_EQ(after_first.misses, before.misses + 1);
  EXPECT_EQ(after_first.hits, before.hits);
  EXPECT_EQ(entries(dir.file("cache")), 1);
  codegen::export_library({f}, dir.file("second.so"));
  auto after_second = codegen::kernel_cache_stats();
  EXPECT_EQ(after_second.hits, after_first.hits + 1);
  EXPECT_EQ(after_second.misses, after_first.misses);
  EXPECT_EQ(read_all(dir.file("first.so")), read_all(dir.file("second.so")));

  // The JIT's object (small code model) is another entry; its hit runs like its miss.
  for (int round = 0; round < 2; ++round) {
    auto before_jit = codegen::kernel_cache_stats();
    runtime::Module m = codegen::build_llvm({f});
    EXPECT_EQ(codegen::kernel_cache_stats().hits, before_jit.hits + round) << round;
    EXPECT_TRUE(matches_interpreter(f, 3 + round)) << round;
    auto args = random_args(f, 11), want = deep_copy(args);
    m.call("scaled_add_hit", args);
    interpret(f, want);
    EXPECT_TRUE(arrays_close(args[2], want[2])) << round;
  }
  EXPECT_EQ(entries(dir.file("cache")), 2);
  runtime::Module loaded = runtime::Module::load(dir.file("second.so"));
  auto args = random_args(f, 5), want = deep_copy(args);
  loaded.call("scaled_add_hit", args);
  interpret(f, want);
  EXPECT_TRUE(arrays_close(args[2], want[2]));
}

TEST(KernelCache, TheKeyCoversTheKernelTheTargetAndTheOptionsButNotNames) {
  TestDir dir;
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  const LoweredFunc f = scaled_add("scaled_add_key");
  codegen::export_library({f}, dir.file("a.so"));
  codegen::LLVMOptions o1;
  o1.opt_level = 1;
  codegen::export_library({f}, dir.file("b.so"), o1);
  codegen::LLVMOptions narrow;
  narrow.vector_width = 128;
  codegen::export_library({f}, dir.file("c.so"), narrow);
  codegen::LLVMOptions generic;
  generic.target_cpu = "x86-64";
  codegen::export_library({f}, dir.file("d.so"), generic);
  codegen::export_library({scaled_add("scaled_add_key", 5.0f)}, dir.file("e.so"));
  EXPECT_EQ(entries(dir.file("cache")), 5);
  auto before = codegen::kernel_cache_stats();
  codegen::export_library({f}, dir.file("f.so"), generic);
  EXPECT_EQ(codegen::kernel_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(read_all(dir.file("d.so")), read_all(dir.file("f.so")));
  // Another name for the kernel and for its buffers: the same entry, and the library runs under the new name.
  const LoweredFunc renamed = scaled_add("scaled_add_renamed", 3.0f, "XYZ");
  codegen::export_library({renamed}, dir.file("g.so"));
  EXPECT_EQ(codegen::kernel_cache_stats().hits, before.hits + 2);
  EXPECT_EQ(entries(dir.file("cache")), 5);
  runtime::Module g = runtime::Module::load(dir.file("g.so"));
  EXPECT_TRUE(runs_like_interpreter(g, renamed, "scaled_add_renamed", 6));
  EXPECT_THROW(g.call("scaled_add_key", random_args(f, 1)), RuntimeError);
}

// Kernels that one library shares with another are compiled once; equal kernels in one library
// are one object under both names; the misses of one compile are compiled on several threads.
TEST(KernelCache, KernelsAreCompiledOnceAcrossLibrariesAndInParallel) {
  TestDir dir;
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  ScopedEnv threads("LOOM_NUM_THREADS", "3");
  std::vector<LoweredFunc> first;
  for (int k = 0; k < 6; ++k) first.push_back(scaled_add("first_" + std::to_string(k), 1.0f + k));
  auto before = codegen::kernel_cache_stats();
  codegen::export_library(first, dir.file("first.so"));
  EXPECT_EQ(codegen::kernel_cache_stats().misses, before.misses + 6);
  runtime::Module a = runtime::Module::load(dir.file("first.so"));
  for (auto& f : first) EXPECT_TRUE(runs_like_interpreter(a, f, f.name, 7)) << f.name;

  // Two kernels of `first` under other names, twice one of them, and a new one.
  std::vector<LoweredFunc> second = {scaled_add("again_2", 3.0f, "PQR"), scaled_add("again_5", 6.0f),
                                     scaled_add("again_5_twice", 6.0f), scaled_add("new", 0.5f)};
  before = codegen::kernel_cache_stats();
  codegen::export_library(second, dir.file("second.so"));
  EXPECT_EQ(codegen::kernel_cache_stats().hits, before.hits + 2);
  EXPECT_EQ(codegen::kernel_cache_stats().misses, before.misses + 1);
  runtime::Module b = runtime::Module::load(dir.file("second.so"));
  for (auto& f : second) EXPECT_TRUE(runs_like_interpreter(b, f, f.name, 8)) << f.name;
  EXPECT_EQ(entries(dir.file("cache")), 7);
  // The JIT's objects (another code model) are entries of their own.
  before = codegen::kernel_cache_stats();
  runtime::Module c = codegen::build_llvm(second);
  EXPECT_EQ(codegen::kernel_cache_stats().misses, before.misses + 3);
  for (auto& f : second) EXPECT_TRUE(runs_like_interpreter(c, f, f.name, 9)) << f.name;
}

TEST(KernelCache, ADamagedEntryIsCompiledAgain) {
  TestDir dir;
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  const LoweredFunc f = scaled_add("scaled_add_damaged");
  codegen::build_llvm({f});
  ASSERT_EQ(entries(dir.file("cache")), 1);
  fs::path entry = fs::directory_iterator(dir.file("cache"))->path();
  std::string bytes = read_all(entry.string());
  bytes[bytes.size() / 2] ^= 0x5a;  // inside the object code
  std::ofstream(entry, std::ios::binary) << bytes;

  auto before = codegen::kernel_cache_stats();
  runtime::Module m = codegen::build_llvm({f});
  EXPECT_EQ(codegen::kernel_cache_stats().misses, before.misses + 1);
  auto args = random_args(f, 2), want = deep_copy(args);
  m.call("scaled_add_damaged", args);
  interpret(f, want);
  EXPECT_TRUE(arrays_close(args[2], want[2]));
  codegen::build_llvm({f});  // the entry was written again: a hit
  EXPECT_EQ(codegen::kernel_cache_stats().hits, before.hits + 1);
}

TEST(KernelCache, OffOrUnwritableCompilesWithoutACache) {
  TestDir dir;
  const LoweredFunc f = scaled_add("scaled_add_off");
  {
    ScopedEnv cache("LOOM_KERNEL_CACHE", "off");
    EXPECT_EQ(codegen::kernel_cache_directory(), fs::path());
    auto before = codegen::kernel_cache_stats();
    codegen::build_llvm({f});
    codegen::build_llvm({f});
    EXPECT_EQ(codegen::kernel_cache_stats().hits, before.hits);
    EXPECT_EQ(codegen::kernel_cache_stats().misses, before.misses);
  }
  std::ofstream(dir.file("a_file")) << "not a folder";
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("a_file/cache").c_str());
  for (int round = 0; round < 2; ++round) {
    runtime::Module m = codegen::build_llvm({f});
    auto args = random_args(f, 4), want = deep_copy(args);
    m.call("scaled_add_off", args);
    interpret(f, want);
    EXPECT_TRUE(arrays_close(args[2], want[2]));
  }
  // An IR dump needs the optimizer to run: the cache stays out of it.
  ScopedEnv cache_dir("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  codegen::LLVMOptions dump;
  dump.dump_ir_path = dir.file("f.ll");
  codegen::build_llvm({f}, dump);
  codegen::build_llvm({f}, dump);
  EXPECT_NE(read_all(dir.file("f.ll")).find("scaled_add_off"), std::string::npos);
  EXPECT_EQ(entries(dir.file("cache")), 0);
}

TEST(KernelCache, ABadSizeBoundIsAnErrorNamingIt) {
  TestDir dir;
  ScopedEnv cache("LOOM_KERNEL_CACHE", dir.file("cache").c_str());
  ScopedEnv size("LOOM_KERNEL_CACHE_MB", "lots");
  std::string msg = error_text<ConfigError>([] { codegen::build_llvm({scaled_add("scaled_add_bad_mb")}); });
  EXPECT_NE(msg.find("LOOM_KERNEL_CACHE_MB='lots'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::test
