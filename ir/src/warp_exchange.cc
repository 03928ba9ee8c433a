#include "warp_exchange.h"

#include <algorithm>

#include "loom/ir/gpu.h"
#include "loom/runtime/error.h"

namespace loom::ir {

WarpExchange::WarpExchange(int64_t threads)
    : lanes_(size_t(threads)), warps_(size_t((threads + kWarpSize - 1) / kWarpSize)) {}

LaneValues WarpExchange::exchange(int64_t t, uint64_t phase, const void* site, const std::string& what,
                                  LaneValues operands, const WarpSemantics& semantics) {
  std::unique_lock<std::mutex> lock(mu_);
  Lane& me = lanes_[size_t(t)];
  Warp& w = warps_[size_t(t / kWarpSize)];
  me.state = State::AtExchange;
  me.phase = phase;
  me.site = site;
  me.what = what;
  me.in = std::move(operands);
  if (w.arrived++ == 0) {
    w.phase = phase;
    w.semantics = &semantics;
  }
  const uint64_t generation = w.generation;
  settle(t / kWarpSize);
  cv_.wait(lock, [&] { return w.generation != generation; });
  me.state = State::Running;
  if (!w.error.empty()) LOOM_THROW(RuntimeError, w.error);
  return std::move(me.out);
}

void WarpExchange::at_barrier(int64_t t, uint64_t phase) { set(t, State::AtBarrier, phase); }
void WarpExchange::left_barrier(int64_t t) { set(t, State::Running, 0); }
void WarpExchange::exited(int64_t t) { set(t, State::Exited, 0); }

void WarpExchange::set(int64_t t, State s, uint64_t phase) {
  std::lock_guard<std::mutex> lock(mu_);
  lanes_[size_t(t)].state = s;
  lanes_[size_t(t)].phase = phase;
  settle(t / kWarpSize);
}

// Completes the warp's instruction when every lane has come, or fails it when the lanes that have
// not can no longer come.
void WarpExchange::settle(int64_t wi) {
  Warp& w = warps_[size_t(wi)];
  if (w.arrived == 0) return;
  const size_t first = size_t(wi) * kWarpSize, end = std::min(first + kWarpSize, lanes_.size());
  const std::string where = std::string("grid interpreter: warp ") + std::to_string(wi) + ": ";
  w.error.clear();
  if (w.arrived == kWarpSize && end - first == size_t(kWarpSize)) {
    std::vector<LaneValues> in;
    std::string what = lanes_[first].what;
    for (size_t l = first; l < end; ++l) {
      if (lanes_[l].site != lanes_[first].site && w.error.empty())
        w.error = where + "lane 0 reached " + what + " and lane " + std::to_string(l - first) + " " +
                  (lanes_[l].what == what ? "another " : "") + lanes_[l].what +
                  ": a warp instruction must be reached by the whole warp together";
      in.push_back(std::move(lanes_[l].in));
    }
    if (w.error.empty()) {
      try {
        std::vector<LaneValues> out = (*w.semantics)(in);
        for (size_t l = first; l < end; ++l) lanes_[l].out = std::move(out[l - first]);
      } catch (const std::exception& e) {
        w.error = where + e.what();
      }
    }
  } else {
    // A lane waiting at a barrier the arrived lanes have passed will come; one at a barrier they
    // have not passed, or one that finished, will not.
    int stuck = 0, exited = 0;
    for (size_t l = first; l < end; ++l) {
      const Lane& x = lanes_[l];
      if (x.state == State::Exited) ++exited;
      if (x.state == State::AtBarrier && x.phase >= w.phase) ++stuck;
    }
    if (w.arrived + stuck + exited < kWarpSize && end - first == size_t(kWarpSize)) return;
    std::string what;
    for (size_t l = first; l < end; ++l)
      if (lanes_[l].state == State::AtExchange) what = lanes_[l].what;
    w.error = where + what + ": " + std::to_string(w.arrived) + " of 32 lanes reached it (" + std::to_string(stuck) +
              " wait at a barrier, " + std::to_string(exited) +
              " finished): a warp instruction must be reached by the whole warp together";
  }
  w.arrived = 0;
  ++w.generation;
  cv_.notify_all();
}

std::vector<LaneValues> mma_m16n8k16_semantics(const std::vector<LaneValues>& lanes) {
  double A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < kWarpSize; ++l) {
    const LaneValues& x = lanes[size_t(l)];
    for (int i = 0; i < 8; ++i) A[mma_m16n8k16_a(l, i).row][mma_m16n8k16_a(l, i).col] = x[size_t(i)];
    for (int i = 0; i < 4; ++i) B[mma_m16n8k16_b(l, i).row][mma_m16n8k16_b(l, i).col] = x[size_t(8 + i)];
    for (int i = 0; i < 4; ++i) C[mma_m16n8k16_c(l, i).row][mma_m16n8k16_c(l, i).col] = x[size_t(12 + i)];
  }
  std::vector<LaneValues> out(size_t(kWarpSize), LaneValues(4));
  for (int l = 0; l < kWarpSize; ++l)
    for (int i = 0; i < 4; ++i) {
      auto [m, n] = mma_m16n8k16_c(l, i);
      double acc = C[m][n];
      for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
      out[size_t(l)][size_t(i)] = double(float(acc));
    }
  return out;
}

std::vector<LaneValues> ldmatrix_x4_semantics(const std::vector<LaneValues>& rows, bool trans) {
  std::vector<LaneValues> out(size_t(kWarpSize), LaneValues(8));
  for (int l = 0; l < kWarpSize; ++l)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 2; ++e) {
        // Matrix j's row r is the row lane 8 j + r addressed.
        int row = trans ? 2 * (l % 4) + e : l / 4, col = trans ? l / 4 : 2 * (l % 4) + e;
        out[size_t(l)][size_t(2 * j + e)] = rows[size_t(8 * j + row)][size_t(col)];
      }
  return out;
}

}  // namespace loom::ir
