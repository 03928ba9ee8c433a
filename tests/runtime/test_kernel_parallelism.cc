// runtime::SerialLoops and the per-range choice between the thread pool and the calling thread
// (runtime/src/kernel_parallelism.h): fake kernels that take longer pooled, or alone.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "../../runtime/src/kernel_parallelism.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/runtime/thread_pool.h"

namespace {

using loom::runtime::RangeParallelism;

void busy_wait_us(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Two iterations, each waiting (boundedly) for the other to start: they overlap only on two
// threads. The number of threads that ran them.
struct Overlap {
  std::atomic<int> inside{0};
  std::mutex mu;
  std::set<std::thread::id> seen;
};

int32_t meet(int64_t, int64_t, void* c) {
  auto* o = static_cast<Overlap*>(c);
  o->inside.fetch_add(1);
  for (int i = 0; i < 200 && o->inside.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard<std::mutex> lock(o->mu);
  o->seen.insert(std::this_thread::get_id());
  return 0;
}

size_t threads_used() {
  Overlap o;
  EXPECT_EQ(loom_parallel_for(2, meet, &o), 0);
  return o.seen.size();
}

// A fake kernel whose time depends on how its loops run: slow on a worker (its data on the other
// core) takes 80 µs pooled and 20 µs alone; fast on a worker takes 50 µs pooled and 100 alone; a
// large one takes 300 µs pooled and 60 alone, but is too large to try alone (kAloneBudget).
struct Kernel {
  enum Kind { SlowOnWorker, FastOnWorker, Large } kind = SlowOnWorker;
  mutable int calls_alone = 0;
  void operator()() const {
    const bool alone = loom::runtime::parallel_loops_serial();
    calls_alone += alone;
    busy_wait_us(kind == SlowOnWorker   ? (alone ? 20 : 80)
                 : kind == FastOnWorker ? (alone ? 100 : 50)
                                        : (alone ? 60 : 300));
  }
};

class KernelParallelismTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("LOOM_SPIN_US", "300", 1);
    loom::runtime::set_num_threads(2);
  }
  void TearDown() override {
    loom::runtime::set_num_threads(0);
    unsetenv("LOOM_SPIN_US");
    unsetenv("LOOM_FIXED_PARALLELISM");
  }

  // Runs the range of `kernels` through `choice` until it has chosen.
  static void choose(RangeParallelism& choice, const std::vector<Kernel>& kernels) {
    for (int i = 0; i <= 2 * RangeParallelism::kMeasuredCalls; ++i)
      choice.run(0, kernels.size(), [&](size_t k) { kernels[k](); });
  }
  // A fresh choice over `kernels` that `expected` accepts, of up to 5 (the suite runs beside other
  // tests on two cores: a preempted timing can spoil one choice); else the last one.
  template <typename Expected>
  static RangeParallelism choice_that(const std::vector<Kernel>& kernels, Expected expected) {
    RangeParallelism choice;
    for (int attempt = 0; attempt < 5; ++attempt) {
      choice = RangeParallelism();
      choose(choice, kernels);
      if (expected(choice)) break;
    }
    return choice;
  }
};

TEST_F(KernelParallelismTest, SerialLoopsKeepLoopsOnTheCaller) {
  EXPECT_EQ(threads_used(), 2u);
  {
    loom::runtime::SerialLoops alone;
    EXPECT_EQ(threads_used(), 1u);
    {
      loom::runtime::SerialLoops nested;
      EXPECT_EQ(threads_used(), 1u);
    }
    EXPECT_EQ(threads_used(), 1u);  // the outer scope still holds
  }
  EXPECT_EQ(threads_used(), 2u);
}

// Slow-on-a-worker then fast-on-a-worker: all pooled (about 80 + 50 µs) and all alone (20 + 100)
// lose to the first alone and the second pooled (20 + 50).
TEST_F(KernelParallelismTest, EachKernelRunsTheWayItIsFaster) {
  std::vector<Kernel> kernels = {{Kernel::SlowOnWorker}, {Kernel::FastOnWorker}};
  EXPECT_EQ(RangeParallelism().way(), RangeParallelism::Way::Pooled);
  RangeParallelism choice =
      choice_that(kernels, [](const RangeParallelism& c) { return c.way() == RangeParallelism::Way::Candidates; });
  EXPECT_EQ(choice.way(), RangeParallelism::Way::Candidates);
  EXPECT_TRUE(choice.serial(0));
  EXPECT_FALSE(choice.serial(1));
}

TEST_F(KernelParallelismTest, KernelsFasterPooledStayPooled) {
  std::vector<Kernel> kernels = {{Kernel::FastOnWorker}, {Kernel::FastOnWorker}};
  RangeParallelism choice;
  choose(choice, kernels);
  EXPECT_EQ(choice.way(), RangeParallelism::Way::Pooled);
  EXPECT_FALSE(choice.serial(0));
  EXPECT_FALSE(choice.serial(1));
}

TEST_F(KernelParallelismTest, AllSlowOnAWorkerRunsSerially) {
  std::vector<Kernel> kernels = {{Kernel::SlowOnWorker}, {Kernel::SlowOnWorker}};
  RangeParallelism choice = choice_that(kernels, [](const RangeParallelism& c) { return c.serial(0) && c.serial(1); });
  EXPECT_NE(choice.way(), RangeParallelism::Way::Pooled);
  EXPECT_TRUE(choice.serial(0));
  EXPECT_TRUE(choice.serial(1));
}

// A kernel too large to try alone never runs alone, though it would be faster: on a pool that
// speeds it up, one call alone costs several pooled ones.
TEST_F(KernelParallelismTest, LargeKernelsAreNotTriedAlone) {
  std::vector<Kernel> kernels = {{Kernel::SlowOnWorker}, {Kernel::Large}};
  RangeParallelism choice = choice_that(kernels, [](const RangeParallelism& c) { return c.serial(0); });
  EXPECT_TRUE(choice.serial(0));
  EXPECT_FALSE(choice.serial(1));
  EXPECT_EQ(kernels[1].calls_alone, 0);
  EXPECT_GT(kernels[0].calls_alone, 0);
}

// A range chosen alone that later runs faster pooled (the second core was busy while it chose)
// finds out at its next pooled check and chooses again.
TEST_F(KernelParallelismTest, ChoiceIsCheckedAgainstThePool) {
  std::vector<Kernel> kernels = {{Kernel::SlowOnWorker}};
  RangeParallelism choice = choice_that(kernels, [](const RangeParallelism& c) { return c.serial(0); });
  ASSERT_TRUE(choice.serial(0));
  kernels[0].kind = Kernel::FastOnWorker;
  // The check, then a whole new choice (up to 5 checks, should one be preempted).
  for (int attempt = 0; attempt < 5 && choice.serial(0); ++attempt)
    for (int i = 0; i < RangeParallelism::kCheckEvery + 2 * RangeParallelism::kMeasuredCalls + 1; ++i)
      choice.run(0, 1, [&](size_t k) { kernels[k](); });
  EXPECT_EQ(choice.way(), RangeParallelism::Way::Pooled);
  EXPECT_FALSE(choice.serial(0));
}

// A new pool size starts the choice over; LOOM_FIXED_PARALLELISM keeps every loop on the pool.
TEST_F(KernelParallelismTest, ChoiceRestartsWithThePoolAndCanBeTurnedOff) {
  std::vector<Kernel> kernels = {{Kernel::SlowOnWorker}};
  RangeParallelism choice = choice_that(kernels, [](const RangeParallelism& c) { return c.serial(0); });
  ASSERT_TRUE(choice.serial(0));
  loom::runtime::set_num_threads(3);
  EXPECT_FALSE(choice.serial(0));  // chosen for another pool
  const int alone = kernels[0].calls_alone;
  choice.run(0, 1, [&](size_t k) { kernels[k](); });
  EXPECT_EQ(kernels[0].calls_alone, alone);  // measuring again: the first call pooled
  EXPECT_FALSE(choice.serial(0));
  loom::runtime::set_num_threads(2);
  setenv("LOOM_FIXED_PARALLELISM", "1", 1);
  RangeParallelism fixed;
  choose(fixed, kernels);
  EXPECT_EQ(fixed.way(), RangeParallelism::Way::Pooled);
  EXPECT_FALSE(fixed.serial(0));
  // A value that is no flag is an error naming the variable, on a pool of one thread too.
  setenv("LOOM_FIXED_PARALLELISM", "maybe", 1);
  for (int threads : {1, 2}) {
    loom::runtime::set_num_threads(threads);
    RangeParallelism any;
    EXPECT_THROW(any.run(0, 1, [&](size_t k) { kernels[k](); }), loom::ConfigError) << threads << " threads";
  }
}

}  // namespace
