// The on-disk cache helpers (runtime/disk_cache.h): content hashes against values worked out by
// hand, entries that read back only when intact and stored under the same check, the directory
// the environment picks, and trimming that removes the least recently used entries first.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "loom/runtime/disk_cache.h"

namespace loom::runtime {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(DiskCache, ContentHashIsFnv1a) {
  // FNV-1a 64 of "" is the offset basis; of "a", (basis ^ 'a') * prime (the published test vector).
  EXPECT_EQ(content_hash(""), "cbf29ce484222325");
  EXPECT_EQ(content_hash("a"), "af63dc4c8601ec8c");
  EXPECT_NE(binary_digest(std::string(64, 'x')), binary_digest(std::string(65, 'x')));
  EXPECT_NE(binary_digest("abcdefgh12345678"), binary_digest("abcdefgh12345679"));
}

TEST(DiskCache, EntriesReadBackOnlyWhenIntactAndForTheSameCheck) {
  test::TestDir dir;
  const fs::path file = dir.path() / "sub" / "entry.o";
  const std::string bytes("object\0code\n\nwith newlines", 26);
  ASSERT_TRUE(write_cache_entry(file, bytes, "key text"));
  EXPECT_EQ(read_cache_entry(file, "key text"), bytes);
  EXPECT_EQ(read_cache_entry(file, "another key"), std::nullopt);  // a collision of file names
  EXPECT_EQ(read_cache_entry(dir.path() / "missing.o", "key text"), std::nullopt);

  std::string all = read_all(file);
  for (size_t at : {size_t(3), all.size() - 5}) {  // in the header, in the bytes
    std::string damaged = all;
    damaged[at] ^= 0x20;
    std::ofstream(file, std::ios::binary) << damaged;
    EXPECT_EQ(read_cache_entry(file, "key text"), std::nullopt) << at;
  }
  std::ofstream(file, std::ios::binary) << all.substr(0, all.size() - 1);  // cut short
  EXPECT_EQ(read_cache_entry(file, "key text"), std::nullopt);
  std::ofstream(file, std::ios::binary) << all + "x";  // too long
  EXPECT_EQ(read_cache_entry(file, "key text"), std::nullopt);

  // Nothing is left behind: no temporary files next to the entry.
  ASSERT_TRUE(write_cache_entry(file, bytes, "key text"));
  int files = 0;
  for (auto& e : fs::directory_iterator(file.parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  // An entry that cannot be written (its folder would be a file) is false, not an error.
  EXPECT_FALSE(write_cache_entry(file / "below_a_file.o", bytes, "key text"));
}

TEST(DiskCache, DirectoryFromTheEnvironment) {
  {
    ScopedEnv cache("LOOM_TEST_CACHE", "/some/where");
    EXPECT_EQ(cache_directory("LOOM_TEST_CACHE", "kernels"), fs::path("/some/where"));
  }
  {
    ScopedEnv cache("LOOM_TEST_CACHE", "off");
    EXPECT_EQ(cache_directory("LOOM_TEST_CACHE", "kernels"), fs::path());
  }
  ScopedEnv cache("LOOM_TEST_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(cache_directory("LOOM_TEST_CACHE", "kernels"), fs::path("/xdg/loom/kernels"));
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(cache_directory("LOOM_TEST_CACHE", "cuda"), fs::path("/home/u/.cache/loom/cuda"));
  }
  ScopedEnv home("HOME", nullptr);
  EXPECT_EQ(cache_directory("LOOM_TEST_CACHE", "cuda"), fs::path());
}

TEST(DiskCache, TrimRemovesTheLeastRecentlyUsedFirst) {
  test::TestDir dir;
  const auto now = fs::file_time_type::clock::now();
  // Ten entries of 100 bytes, entry i last used i minutes ago; one file of another kind.
  for (int i = 0; i < 10; ++i) {
    fs::path p = dir.path() / ("e" + std::to_string(i) + ".o");
    std::ofstream(p, std::ios::binary) << std::string(100, 'x');
    fs::last_write_time(p, now - std::chrono::minutes(i));
  }
  std::ofstream(dir.path() / "notes.txt") << std::string(5000, 'n');
  // Temporary files of writers: one that died two hours ago, one writing now.
  std::ofstream(dir.path() / "x.o.tmp12_0") << "half";
  fs::last_write_time(dir.path() / "x.o.tmp12_0", now - std::chrono::hours(2));
  std::ofstream(dir.path() / "y.o.tmp13_0") << "half";
  trim_cache(dir.path(), ".o", 1000);  // 1000 bytes fit: no entry goes
  EXPECT_TRUE(fs::exists(dir.path() / "e9.o"));
  EXPECT_FALSE(fs::exists(dir.path() / "x.o.tmp12_0"));
  EXPECT_TRUE(fs::exists(dir.path() / "y.o.tmp13_0"));
  trim_cache(dir.path(), ".o", 800);  // over: down to 600 bytes, the four oldest go
  for (int i = 0; i < 10; ++i) EXPECT_EQ(fs::exists(dir.path() / ("e" + std::to_string(i) + ".o")), i < 6) << i;
  EXPECT_TRUE(fs::exists(dir.path() / "notes.txt"));
  // Reading an entry marks it used: it outlives entries read less recently.
  fs::path oldest = dir.path() / "e5.o";
  ASSERT_TRUE(write_cache_entry(oldest, "abc", "k"));
  fs::last_write_time(oldest, now - std::chrono::hours(1));
  ASSERT_TRUE(read_cache_entry(oldest, "k"));
  trim_cache(dir.path(), ".o", 300);
  EXPECT_TRUE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(dir.path() / "e4.o"));
}

}  // namespace
}  // namespace loom::runtime
