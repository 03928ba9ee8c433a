// The strict reader of LOOM_* environment variables (runtime/env.h): accepted values parse, junk
// is a ConfigError naming the variable, its value and what it accepts (atoi read "abc" as 0 and
// the thread count silently fell back to the default); a bad LOOM_NUM_THREADS reaches a parallel
// loop's caller as its error, not as an exception thrown through generated code.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

#include "common/error_text.h"
#include "common/scoped_env.h"
#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/runtime/thread_pool.h"

namespace loom::runtime {
namespace {

using test::ScopedEnv;

TEST(Env, IntegersAndFlagsParseStrictly) {
  {
    ScopedEnv e("LOOM_TEST_VAR", "12");
    EXPECT_EQ(env::integer("LOOM_TEST_VAR", 1, 100), 12);
    EXPECT_EQ(env::text("LOOM_TEST_VAR"), "12");
  }
  EXPECT_EQ(env::integer("LOOM_TEST_VAR", 1, 100), std::nullopt);
  EXPECT_FALSE(env::flag("LOOM_TEST_VAR"));
  for (const char* on : {"1", "true", "ON", "Yes"}) {
    ScopedEnv e("LOOM_TEST_VAR", on);
    EXPECT_TRUE(env::flag("LOOM_TEST_VAR")) << on;
  }
  for (const char* off : {"0", "false", "off", "NO", ""}) {
    ScopedEnv e("LOOM_TEST_VAR", off);
    EXPECT_FALSE(env::flag("LOOM_TEST_VAR")) << off;
  }
  for (const char* junk : {"abc", "12abc", " 12", "101", "0", "-3", "1e3", "99999999999999999999"}) {
    ScopedEnv e("LOOM_TEST_VAR", junk);
    std::string msg = test::error_text<ConfigError>([] { env::integer("LOOM_TEST_VAR", 1, 100); });
    EXPECT_NE(
        msg.find(std::string("environment variable LOOM_TEST_VAR='") + junk + "': expected an integer from 1 to 100"),
        std::string::npos)
        << msg;
  }
  ScopedEnv e("LOOM_TEST_VAR", "maybe");
  std::string msg = test::error_text<ConfigError>([] { env::flag("LOOM_TEST_VAR"); });
  EXPECT_NE(
      msg.find("environment variable LOOM_TEST_VAR='maybe': expected a flag (1, true, on, yes or 0, false, off, no)"),
      std::string::npos)
      << msg;
}

int32_t count_body(int64_t begin, int64_t end, void* closure) {
  *static_cast<std::atomic<int64_t>*>(closure) += end - begin;
  return 0;
}

TEST(Env, BadThreadCountIsTheParallelLoopsError) {
  set_num_threads(0);  // the default: from LOOM_NUM_THREADS
  {
    ScopedEnv e("LOOM_NUM_THREADS", "abc");
    EXPECT_NE(test::error_text<ConfigError>([] { num_threads(); }).find("LOOM_NUM_THREADS='abc'"), std::string::npos);
    std::atomic<int64_t> n{0};
    loom_set_last_error("");
    EXPECT_NE(loom_parallel_for(100, count_body, &n), 0);
    EXPECT_NE(std::string(loom_get_last_error())
                  .find("environment variable LOOM_NUM_THREADS='abc': expected an integer from 1 to 4096"),
              std::string::npos)
        << loom_get_last_error();
    EXPECT_EQ(n.load(), 0);
  }
  {
    ScopedEnv e("LOOM_NUM_THREADS", "3");
    EXPECT_EQ(num_threads(), 3);
    std::atomic<int64_t> n{0};
    EXPECT_EQ(loom_parallel_for(100, count_body, &n), 0);
    EXPECT_EQ(n.load(), 100);
  }
  set_num_threads(0);
}

// A bad LOOM_MIN_PARALLEL_WORK: the pool is not made, and the first loop (hinted or not) says why.
TEST(Env, BadParallelWorkIsTheParallelLoopsError) {
  set_num_threads(2);
  {
    ScopedEnv e("LOOM_MIN_PARALLEL_WORK", "-1");
    set_num_threads(2);  // a new pool reads it
    std::atomic<int64_t> n{0};
    loom_set_last_error("");
    EXPECT_NE(loom_parallel_for_work(100, count_body, &n, 5000), 0);
    EXPECT_NE(std::string(loom_get_last_error()).find("environment variable LOOM_MIN_PARALLEL_WORK='-1'"),
              std::string::npos)
        << loom_get_last_error();
    EXPECT_EQ(n.load(), 0);
    EXPECT_NE(loom_parallel_for(100, count_body, &n), 0);
    EXPECT_NE(test::error_text<ConfigError>([] { min_parallel_work(); }).find("LOOM_MIN_PARALLEL_WORK"),
              std::string::npos);
  }
  {
    ScopedEnv e("LOOM_MIN_PARALLEL_WORK", "200");
    set_num_threads(2);
    EXPECT_EQ(min_parallel_work(), 200);
    std::atomic<int64_t> n{0};
    EXPECT_EQ(loom_parallel_for_work(100, count_body, &n, 100), 0);
    EXPECT_EQ(n.load(), 100);
  }
  set_num_threads(0);
}

}  // namespace
}  // namespace loom::runtime
