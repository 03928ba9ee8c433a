// The grid interpreter's warp instructions: the lanes of a warp meet, each with its operands, and
// each leaves with its part of the result, computed once for the warp from the PTX ISA's
// semantics (warp_exchange.cc). Internal to the ir library.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace loom::ir {

using LaneValues = std::vector<double>;
// All 32 lanes' operands in, each lane's results out.
using WarpSemantics = std::function<std::vector<LaneValues>(const std::vector<LaneValues>&)>;

// The warps of one block (consecutive linear thread indices, 32 a warp). A warp whose lanes
// cannot all come (one finished, or waits at a barrier the arrived lanes have not passed) or that
// come to different instructions fails: each of its lanes throws RuntimeError, none hangs.
class WarpExchange {
 public:
  explicit WarpExchange(int64_t threads);
  // Lane t (having passed `phase` barriers) brings `operands` to the warp instruction `site` (the
  // statement; `what` names it in errors); returns its results once the whole warp has come to the
  // same statement.
  LaneValues exchange(int64_t t, uint64_t phase, const void* site, const std::string& what, LaneValues operands,
                      const WarpSemantics& semantics);
  void at_barrier(int64_t t, uint64_t phase);
  void left_barrier(int64_t t);
  void exited(int64_t t);

 private:
  enum class State : uint8_t { Running, AtExchange, AtBarrier, Exited };
  struct Lane {
    State state = State::Running;
    uint64_t phase = 0;
    const void* site = nullptr;
    std::string what;
    LaneValues in, out;
  };
  struct Warp {
    int arrived = 0;
    uint64_t phase = 0, generation = 0;
    std::string error;
    const WarpSemantics* semantics = nullptr;
  };
  void set(int64_t t, State s, uint64_t phase);
  void settle(int64_t warp);
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Lane> lanes_;
  std::vector<Warp> warps_;
};

// mma.sync m16n8k16 (f32 += f16 x f16): operands a[8], b[4], c[4] per lane (ir/gpu.h's fragment
// tables); results d[4] = the lane's part of A B + C, in double rounded to float32.
std::vector<LaneValues> mma_m16n8k16_semantics(const std::vector<LaneValues>& lanes);
// ldmatrix.sync m8n8.x4 (b16): operand the 8 elements of the row the lane addresses (row l % 8 of
// matrix l / 8); results 8 elements, pair j from matrix j: (row l / 4, columns 2 (l % 4) + {0, 1}),
// or with `trans` (rows 2 (l % 4) + {0, 1}, column l / 4).
std::vector<LaneValues> ldmatrix_x4_semantics(const std::vector<LaneValues>& rows, bool trans);

}  // namespace loom::ir
