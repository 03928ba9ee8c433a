// A temporary folder of the running test's own (suite, test name, process id and a counter in its
// name), removed when the object goes out of scope. Tests that write files use it so that two
// test executables run in parallel by `ctest -j` never share a path.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace loom::test {

class TestDir {
 public:
  TestDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "no_test";
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized test names contain '/'
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("loom_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Path of a file inside the folder.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace loom::test
