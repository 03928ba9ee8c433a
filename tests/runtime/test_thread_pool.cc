// loom_parallel_for: chunking, thread counts, nesting and error propagation; loom_parallel_for_work:
// the host's measured threshold; loom_parallel_for_alternating: every other call backwards.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "loom/runtime/module.h"
#include "loom/runtime/thread_pool.h"

namespace {

struct Recorder {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> ran_by;  // the thread of each chunk
  std::set<std::thread::id> threads;
};

int32_t record(int64_t begin, int64_t end, void* closure) {
  auto* r = static_cast<Recorder*>(closure);
  std::lock_guard<std::mutex> lock(r->mu);
  r->chunks.push_back({begin, end});
  r->ran_by.push_back(std::this_thread::get_id());
  r->threads.insert(std::this_thread::get_id());
  return 0;
}

// Chunks are contiguous, non-empty, and cover [0, extent) exactly once.
void expect_cover(std::vector<std::pair<int64_t, int64_t>> chunks, int64_t extent) {
  std::sort(chunks.begin(), chunks.end());
  int64_t next = 0;
  for (auto& [b, e] : chunks) {
    EXPECT_EQ(b, next);
    EXPECT_LT(b, e);
    next = e;
  }
  EXPECT_EQ(next, extent);
}

// Workers spin between loops as they do by default (the suite's environment turns spinning off).
class ThreadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("LOOM_SPIN_US", "300", 1); }
  void TearDown() override {
    loom::runtime::set_num_threads(0);
    unsetenv("LOOM_SPIN_US");
  }
};

TEST_F(ThreadPoolTest, ChunksCoverTheRange) {
  for (int threads : {1, 2, 3, 4}) {
    loom::runtime::set_num_threads(threads);
    EXPECT_EQ(loom::runtime::num_threads(), threads);
    for (int64_t extent : {1, 2, 3, 7, 10, 1000}) {
      Recorder r;
      ASSERT_EQ(loom_parallel_for(extent, record, &r), 0);
      expect_cover(r.chunks, extent);
      // No chunk larger than half a thread's part, so a thread that comes late can be helped.
      int64_t largest = 0;
      for (auto& [b, e] : r.chunks) largest = std::max(largest, e - b);
      const int64_t part = (extent + threads - 1) / threads;
      if (threads > 1)
        EXPECT_LE(largest, std::max<int64_t>(1, (part + 1) / 2)) << threads << " threads, extent " << extent;
      if (threads > 1)
        EXPECT_GE(static_cast<int64_t>(r.chunks.size()), std::min<int64_t>(extent, threads))
            << threads << " threads, extent " << extent;
      if (threads == 1) EXPECT_EQ(r.chunks.size(), 1u) << "one thread runs the loop in one call";
    }
  }
}

// The owner of a thread's part claims a quarter of what is left of it from its front, a helper
// half from its back: the part's remaining iterations stay one range, so the owner's chunks are a
// prefix of the part and the helpers' its suffix, each side's chunks shrinking towards the middle
// (iterations left at the end come in small pieces any idle thread can take). Which thread gets
// there first is up to the OS: a caller descheduled the whole loop leaves its part to the worker.
TEST_F(ThreadPoolTest, ClaimsShrinkWithinEachThreadsPart) {
  loom::runtime::set_num_threads(2);
  Recorder r;
  ASSERT_EQ(loom_parallel_for(1000, record, &r), 0);
  expect_cover(r.chunks, 1000);
  const std::thread::id caller = std::this_thread::get_id();
  int singles = 0;
  for (auto& [b, e] : r.chunks) {
    EXPECT_FALSE(b < 500 && e > 500) << "chunk [" << b << ", " << e << ") crosses the parts' boundary";
    singles += e - b == 1;
  }
  for (int part = 0; part < 2; ++part) {
    const int64_t lo = part * 500, hi = lo + 500;
    // (start, size, run by the part's owner) of the part's chunks, by start.
    std::vector<std::tuple<int64_t, int64_t, bool>> own;
    for (size_t i = 0; i < r.chunks.size(); ++i) {
      auto [b, e] = r.chunks[i];
      if (b >= lo && b < hi) own.emplace_back(b, e - b, (r.ran_by[i] == caller) == (part == 0));
    }
    std::sort(own.begin(), own.end());
    size_t owner_end = 0;
    while (owner_end < own.size() && std::get<2>(own[owner_end])) ++owner_end;
    for (size_t i = owner_end; i < own.size(); ++i)
      EXPECT_FALSE(std::get<2>(own[i])) << "part " << part << ": the owner claimed past a helper's chunk";
    for (size_t i = 1; i < owner_end; ++i)
      EXPECT_LE(std::get<1>(own[i]), std::get<1>(own[i - 1])) << "part " << part << ": the owner's claims grew";
    for (size_t i = owner_end + 1; i < own.size(); ++i)
      EXPECT_GE(std::get<1>(own[i]), std::get<1>(own[i - 1])) << "part " << part << ": a helper's claims grew";
    if (owner_end > 0) {
      EXPECT_LE(std::get<1>(own[0]), 125) << "part " << part << ": the owner's first claim";
    }
    if (owner_end == own.size()) {
      EXPECT_EQ(std::get<1>(own[0]), 125) << "part " << part << " had no helper";
    } else {
      EXPECT_LE(std::get<1>(own.back()), 250) << "part " << part << ": a helper's first claim";
    }
  }
  EXPECT_LE(singles, 8);
  EXPECT_LT(r.chunks.size(), 64u);
}

TEST_F(ThreadPoolTest, EmptyRangeRunsNothing) {
  Recorder r;
  EXPECT_EQ(loom_parallel_for(0, record, &r), 0);
  EXPECT_TRUE(r.chunks.empty());
}

TEST_F(ThreadPoolTest, UsesSeveralThreads) {
  loom::runtime::set_num_threads(2);
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  struct Ctx {
    std::atomic<int>* inside;
    std::atomic<bool>* overlapped;
  } ctx{&inside, &overlapped};
  // Each chunk waits (boundedly) for the other one to start: only possible with 2 threads.
  auto body = [](int64_t, int64_t, void* c) -> int32_t {
    auto* x = static_cast<Ctx*>(c);
    x->inside->fetch_add(1);
    for (int i = 0; i < 2000 && x->inside->load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (x->inside->load() == 2) x->overlapped->store(true);
    return 0;
  };
  ASSERT_EQ(loom_parallel_for(2, body, &ctx), 0);
  EXPECT_TRUE(overlapped.load());
}

// 8 outer iterations, each running a loop of 10 inside (through loom_parallel_for_work with a
// large hint when `hinted`): the inner loops run serially on whichever thread runs the outer
// iteration. The inner iterations run, or -1 if a loop failed.
std::atomic<int64_t> nested_total;
bool nested_hinted = false;
int32_t nested_inner(int64_t b, int64_t e, void*) {
  nested_total += e - b;
  return 0;
}
int32_t nested_outer(int64_t b, int64_t e, void*) {
  for (int64_t i = b; i < e; ++i)
    if (int32_t rc = nested_hinted ? loom_parallel_for_work(10, nested_inner, nullptr, 1 << 20)
                                   : loom_parallel_for(10, nested_inner, nullptr))
      return rc;
  return 0;
}
int64_t run_nested(bool hinted) {
  nested_total = 0;
  nested_hinted = hinted;
  int32_t rc =
      hinted ? loom_parallel_for_work(8, nested_outer, nullptr, 1 << 20) : loom_parallel_for(8, nested_outer, nullptr);
  return rc == 0 ? nested_total.load() : -1;
}

TEST_F(ThreadPoolTest, NestedLoopsRunSeriallyInsideWorkers) {
  loom::runtime::set_num_threads(2);
  EXPECT_EQ(run_nested(false), 80);
}

TEST_F(ThreadPoolTest, ErrorCodeAndMessagePropagate) {
  loom::runtime::set_num_threads(2);
  auto body = [](int64_t b, int64_t, void*) -> int32_t {
    if (b == 0) return 0;
    loom_set_last_error("chunk failed");
    return 7;
  };
  loom_set_last_error("");
  EXPECT_EQ(loom_parallel_for(2, body, nullptr), 7);
  EXPECT_STREQ(loom_get_last_error(), "chunk failed");
  // The pool stays usable.
  Recorder r;
  EXPECT_EQ(loom_parallel_for(5, record, &r), 0);
  expect_cover(r.chunks, 5);
}

namespace {

// Each thread's first chunk of one loop, where it begins and ends. Each first chunk waits (at most
// a second) until the other thread has claimed its own, so both first claims are made with both
// threads there.
struct FirstChunks {
  std::mutex mu;
  std::vector<std::tuple<std::thread::id, int64_t, int64_t>> first;
  std::atomic<int> started{0};
};

int32_t record_first_chunk(int64_t b, int64_t e, void* c) {
  auto* f = static_cast<FirstChunks*>(c);
  {
    std::lock_guard<std::mutex> lock(f->mu);
    for (auto& [id, begin, end] : f->first)
      if (id == std::this_thread::get_id()) return 0;
    f->first.push_back({std::this_thread::get_id(), b, e});
  }
  f->started.fetch_add(1);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (f->started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  return 0;
}

}  // namespace

// Thread t starts on the t-th part of the loop (the caller on the first) and helps with the
// others' only when its own is done: loops split alike give each thread what it wrote. Each
// thread's first chunk waits (at most a second) until the other has claimed its first, so both
// first claims are made with both threads there; retried where the worker never came.
TEST_F(ThreadPoolTest, EachThreadStartsOnItsOwnPart) {
  loom::runtime::set_num_threads(2);
  for (int attempt = 0; attempt < 10; ++attempt) {
    FirstChunks f;
    ASSERT_EQ(loom_parallel_for(64, record_first_chunk, &f), 0);
    if (f.first.size() < 2) continue;
    for (auto& [id, begin, end] : f.first)
      EXPECT_EQ(begin, id == std::this_thread::get_id() ? 0 : 32)
          << (id == std::this_thread::get_id() ? "the caller's" : "the worker's") << " first chunk";
    return;
  }
  ADD_FAILURE() << "the worker took no chunk in 10 loops";
}

// A loop of more iterations than a home's 32-bit units: claimed in units of several iterations,
// still covering the range once.
TEST_F(ThreadPoolTest, LoopsBeyondThirtyTwoBitsCoverTheirRange) {
  for (int threads : {1, 2, 3}) {
    loom::runtime::set_num_threads(threads);
    Recorder r;
    const int64_t extent = (int64_t(1) << 33) + 7;
    ASSERT_EQ(loom_parallel_for(extent, record, &r), 0);
    expect_cover(r.chunks, extent);
    EXPECT_LT(r.chunks.size(), 500u);
  }
}

TEST_F(ThreadPoolTest, ManyShortLoops) {
  loom::runtime::set_num_threads(2);
  for (int k = 0; k < 2000; ++k) {
    Recorder r;
    ASSERT_EQ(loom_parallel_for(3, record, &r), 0);
    ASSERT_EQ(r.chunks.size(), 3u);  // parts of one and two iterations, claimed one at a time
  }
}

// LOOM_SPIN_US=0: nobody busy-waits (workers sleep between loops, locks block at once); loops
// still cover their range, with the workers taking part, and a hinted one measures a threshold.
TEST_F(ThreadPoolTest, SleepingPoolRunsLoops) {
  struct SpinOff {
    SpinOff() { setenv("LOOM_SPIN_US", "0", 1); }
    ~SpinOff() { unsetenv("LOOM_SPIN_US"); }
  } spin_off;
  loom::runtime::set_num_threads(2);
  for (int k = 0; k < 300; ++k) {
    Recorder r;
    ASSERT_EQ(loom_parallel_for(3, record, &r), 0);
    ASSERT_EQ(r.chunks.size(), 3u);
    expect_cover(r.chunks, 3);
  }
  Recorder hinted;
  ASSERT_EQ(loom_parallel_for_work(1000, record, &hinted, loom::runtime::kMaxParallelWorkThreshold), 0);
  expect_cover(hinted.chunks, 1000);
  EXPECT_GT(loom::runtime::fork_join_ns(), 0);
}

// The threshold grows with the fork-join cost, within the floor (the model compiler's own
// threshold) and the cap: 4 stores a nanosecond.
TEST(ParallelWork, ThresholdFollowsTheForkJoinCost) {
  using loom::runtime::parallel_work_threshold;
  EXPECT_EQ(parallel_work_threshold(0), loom::runtime::kMinParallelWorkFloor);
  EXPECT_EQ(parallel_work_threshold(-5), loom::runtime::kMinParallelWorkFloor);
  EXPECT_EQ(parallel_work_threshold(100), loom::runtime::kMinParallelWorkFloor);
  EXPECT_EQ(parallel_work_threshold(1000), 4000);
  EXPECT_EQ(parallel_work_threshold(4000), 16000);
  EXPECT_EQ(parallel_work_threshold(1e9), loom::runtime::kMaxParallelWorkThreshold);
  EXPECT_EQ(parallel_work_threshold(std::numeric_limits<double>::infinity()), loom::runtime::kMaxParallelWorkThreshold);
  for (double ns = 0; ns < 40000; ns += 97)
    EXPECT_LE(parallel_work_threshold(ns), parallel_work_threshold(ns + 97)) << ns;
}

// Sets an environment variable for one scope (the pool reads LOOM_MIN_PARALLEL_WORK when made).
struct ScopedMinWork {
  explicit ScopedMinWork(const char* value) {
    setenv("LOOM_MIN_PARALLEL_WORK", value, 1);
    loom::runtime::set_num_threads(2);
  }
  ~ScopedMinWork() {
    unsetenv("LOOM_MIN_PARALLEL_WORK");
    loom::runtime::set_num_threads(0);
  }
};

// Below the threshold a hinted loop is one call on the calling thread; at it, chunks as any loop.
TEST_F(ThreadPoolTest, HintedLoopsBelowTheThresholdRunOnTheCaller) {
  ScopedMinWork env("5000");
  EXPECT_EQ(loom::runtime::min_parallel_work(), 5000);
  EXPECT_EQ(loom::runtime::fork_join_ns(), 0) << "a fixed threshold measures nothing";
  Recorder small;
  ASSERT_EQ(loom_parallel_for_work(1000, record, &small, 4999), 0);
  ASSERT_EQ(small.chunks.size(), 1u);
  EXPECT_EQ(small.chunks[0], (std::pair<int64_t, int64_t>{0, 1000}));
  EXPECT_EQ(*small.threads.begin(), std::this_thread::get_id());
  Recorder large;
  ASSERT_EQ(loom_parallel_for_work(1000, record, &large, 5000), 0);
  expect_cover(large.chunks, 1000);
  std::sort(large.chunks.begin(), large.chunks.end());
  // Chunked as loom_parallel_for: an owner claims a quarter of what is left of its half, a
  // helper half of it (the caller's first claim is [0, 125) unless the worker helped before it
  // claimed, on a loaded machine: then [250, 500) is the worker's).
  EXPECT_GT(large.chunks.size(), 1u);
  for (const auto& [begin, end] : large.chunks)
    EXPECT_LE(end - begin, 250) << "a chunk [" << begin << ", " << end << ")";
  Recorder empty;
  EXPECT_EQ(loom_parallel_for_work(0, record, &empty, 1 << 20), 0);
  EXPECT_TRUE(empty.chunks.empty());
}

// Unset, the threshold is measured once per pool: a fork-join that took time, turned into a
// threshold within the bounds; one thread needs none.
TEST_F(ThreadPoolTest, ThresholdIsMeasuredPerPool) {
  unsetenv("LOOM_MIN_PARALLEL_WORK");
  loom::runtime::set_num_threads(1);
  EXPECT_EQ(loom::runtime::min_parallel_work(), 0);
  Recorder one;
  ASSERT_EQ(loom_parallel_for_work(100, record, &one, 0), 0);
  EXPECT_EQ(one.chunks.size(), 1u);
  loom::runtime::set_num_threads(2);
  double ns = loom::runtime::fork_join_ns();
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 1e6) << "a fork-join of a millisecond: the measurement is broken";
  int64_t work = loom::runtime::min_parallel_work();
  EXPECT_EQ(work, loom::runtime::parallel_work_threshold(ns));
  EXPECT_EQ(loom::runtime::fork_join_ns(), ns) << "measured once";
  Recorder big;
  ASSERT_EQ(loom_parallel_for_work(1000, record, &big, loom::runtime::kMaxParallelWorkThreshold), 0);
  EXPECT_GT(big.chunks.size(), 1u);
  // Measured again at the 1024th hinted loop: the fastest measurement stands.
  std::atomic<int64_t> n{0};
  auto count = [](int64_t b, int64_t e, void* c) -> int32_t {
    *static_cast<std::atomic<int64_t>*>(c) += e - b;
    return 0;
  };
  for (int i = 0; i < 1100; ++i) ASSERT_EQ(loom_parallel_for_work(4, count, &n, 0), 0);
  EXPECT_EQ(n.load(), 4400);
  EXPECT_LE(loom::runtime::fork_join_ns(), ns);
  EXPECT_EQ(loom::runtime::min_parallel_work(), loom::runtime::parallel_work_threshold(loom::runtime::fork_join_ns()));
}

// Inside a parallel loop nothing is measured (run() cannot start there): the calls answer with
// what was measured so far.
TEST_F(ThreadPoolTest, ThresholdQueriedInsideALoopDoesNotMeasure) {
  unsetenv("LOOM_MIN_PARALLEL_WORK");
  loom::runtime::set_num_threads(2);
  static std::atomic<int64_t> inside_work;
  static std::atomic<int> calls;
  inside_work = -1;
  calls = 0;
  auto body = [](int64_t, int64_t, void*) -> int32_t {
    inside_work = loom::runtime::min_parallel_work();
    ++calls;
    return 0;
  };
  ASSERT_EQ(loom_parallel_for(2, body, nullptr), 0);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(inside_work.load(), loom::runtime::kMinParallelWorkFloor) << "nothing measured yet: the floor";
  EXPECT_GT(loom::runtime::fork_join_ns(), 0) << "outside the loop it measures";
}

// A hinted loop inside a parallel loop runs serially, as any nested loop; an error propagates.
TEST_F(ThreadPoolTest, HintedLoopsNestAndFailAsAnyLoop) {
  ScopedMinWork env("0");
  EXPECT_EQ(run_nested(true), 80);
  auto failing = [](int64_t b, int64_t, void*) -> int32_t {
    if (b == 0) return 0;
    loom_set_last_error("hinted chunk failed");
    return 3;
  };
  loom_set_last_error("");
  EXPECT_EQ(loom_parallel_for_work(2, failing, nullptr, 1 << 20), 3);
  EXPECT_STREQ(loom_get_last_error(), "hinted chunk failed");
}

}  // namespace

// loom_parallel_for_alternating: calls sharing a direction word cover the range once each, and
// every other call runs backwards: on one thread its chunks from the last iterations down, on
// several each thread's part from that part's far end (the thread keeps its part, whose data its
// cache holds from the call before).
TEST_F(ThreadPoolTest, AlternatingLoopsRunEveryOtherCallBackwards) {
  for (int threads : {1, 2, 3}) {
    loom::runtime::set_num_threads(threads);
    for (int64_t extent : {1, 2, 3, 7, 16, 1000}) {
      int32_t direction = 0;
      for (int call = 0; call < 4; ++call) {
        Recorder r;
        ASSERT_EQ(loom_parallel_for_alternating(extent, record, &r, -1, &direction), 0);
        expect_cover(r.chunks, extent);
        EXPECT_EQ(direction, (call + 1) % 2) << "the word records the next call's direction";
        if (threads != 1) continue;
        const bool backwards = call % 2 == 1;
        if (!backwards) {
          EXPECT_EQ(r.chunks.size(), 1u) << "a forward call on one thread runs in one call";
          continue;
        }
        EXPECT_EQ(r.chunks.front().second, extent) << "a backward call starts at the end, extent " << extent;
        for (size_t k = 1; k < r.chunks.size(); ++k)
          EXPECT_EQ(r.chunks[k].second, r.chunks[k - 1].first) << "chunk " << k << ", extent " << extent;
        const int64_t chunk = (extent + 63) / 64;
        EXPECT_EQ(r.chunks.size(), size_t((extent + chunk - 1) / chunk)) << "chunks of extent / 64, rounded up";
      }
    }
  }
  // A hinted loop below the threshold runs serially on the caller, backwards every other call.
  setenv("LOOM_MIN_PARALLEL_WORK", "1000", 1);
  loom::runtime::set_num_threads(2);
  int32_t direction = 0;
  for (int call = 0; call < 2; ++call) {
    Recorder r;
    ASSERT_EQ(loom_parallel_for_alternating(10, record, &r, 999, &direction), 0);
    expect_cover(r.chunks, 10);
    EXPECT_EQ(r.threads.size(), 1u);
    EXPECT_EQ(r.chunks.front().first, call == 0 ? 0 : 9) << "call " << call;
  }
  unsetenv("LOOM_MIN_PARALLEL_WORK");
}

// A thread done with its own part helps another's from that part's far end, backwards too: on
// a backward call the worker, done with [32, 64) while the caller's first chunk (from the end of
// [0, 32)) waits for it, claims the front of the caller's part. Retried where the worker never
// came within a second.
TEST_F(ThreadPoolTest, AlternatingLoopsHelpFromTheOtherPartsFarEnd) {
  loom::runtime::set_num_threads(2);
  struct Claims {
    std::mutex mu;
    std::thread::id caller;
    std::vector<std::tuple<std::thread::id, int64_t, int64_t>> chunks;
    std::atomic<bool> worker_helped{false}, caller_started{false};
  };
  auto body = [](int64_t b, int64_t e, void* c) -> int32_t {
    auto* f = static_cast<Claims*>(c);
    const bool caller = std::this_thread::get_id() == f->caller;
    {
      std::lock_guard<std::mutex> lock(f->mu);
      f->chunks.push_back({std::this_thread::get_id(), b, e});
    }
    if (!caller && b < 32) f->worker_helped.store(true);
    if (caller && !f->caller_started.exchange(true)) {
      auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (!f->worker_helped.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    }
    return 0;
  };
  int32_t direction = 1;  // the next call runs backwards
  for (int attempt = 0; attempt < 10; ++attempt, direction = 1) {
    Claims f;
    f.caller = std::this_thread::get_id();
    ASSERT_EQ(loom_parallel_for_alternating(64, body, &f, -1, &direction), 0);
    std::vector<std::pair<int64_t, int64_t>> all;
    for (auto& [id, b, e] : f.chunks) all.push_back({b, e});
    expect_cover(all, 64);
    if (!f.worker_helped.load()) continue;
    // The worker may record its own first chunk before the caller does: find the caller's.
    auto caller_first =
        std::find_if(f.chunks.begin(), f.chunks.end(), [&](const auto& c) { return std::get<0>(c) == f.caller; });
    if (caller_first == f.chunks.end()) continue;  // the worker ran the caller's whole part first
    EXPECT_EQ(std::get<2>(*caller_first), 32) << "the caller's first chunk ends its part";
    for (auto& [id, b, e] : f.chunks)
      if (id != f.caller && b < 32) {
        EXPECT_EQ(b, 0) << "the worker's first help starts at the front of the caller's part";
        return;
      }
  }
  ADD_FAILURE() << "the worker helped in none of 10 loops";
}

TEST_F(ThreadPoolTest, AlternatingLoopsKeepEachThreadsPart) {
  loom::runtime::set_num_threads(2);
  int32_t direction = 0;
  int checked[2] = {0, 0};
  for (int attempt = 0; attempt < 20 && (checked[0] == 0 || checked[1] == 0); ++attempt) {
    const bool backwards = direction != 0;
    FirstChunks f;
    ASSERT_EQ(loom_parallel_for_alternating(64, record_first_chunk, &f, -1, &direction), 0);
    if (f.first.size() < 2) continue;
    for (auto& [id, begin, end] : f.first) {
      const bool caller = id == std::this_thread::get_id();
      if (backwards)
        EXPECT_EQ(end, caller ? 32 : 64) << (caller ? "the caller's" : "the worker's") << " first chunk, backwards";
      else
        EXPECT_EQ(begin, caller ? 0 : 32) << (caller ? "the caller's" : "the worker's") << " first chunk, forwards";
    }
    ++checked[backwards ? 1 : 0];
  }
  EXPECT_GT(checked[0], 0) << "no forward call with both threads in 20";
  EXPECT_GT(checked[1], 0) << "no backward call with both threads in 20";
}
