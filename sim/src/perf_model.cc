// The performance model's event loop (perf_model.h). Events are processed in time order, so the
// DRAM bus serves requests in the order they are made, as the RTL's arbiter and DRAM model do
// for requests that are not simultaneous.
#include "loom/sim/perf_model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::sim {

using namespace loom::accel;

namespace {

struct Burst {
  uint32_t beats;
};

// The AXI bursts of a LOAD or STORE: each DRAM row split at 4 KiB boundaries and at 256 beats.
std::vector<Burst> bursts_of(const Instruction& i, const AccelConfig& c) {
  const uint64_t bus = uint64_t(c.dram_bus_bytes()), entry = uint64_t(entry_bytes(c, i.mem));
  std::vector<Burst> out;
  for (uint32_t r = 0; r < i.y_size; ++r) {
    uint64_t begin = (uint64_t(i.dram_base) + uint64_t(r) * i.x_stride) * entry, end = begin + i.x_size * entry;
    uint64_t at = begin / bus * bus;
    while (at < end) {
      uint64_t stop = std::min({end, (at / 4096 + 1) * 4096, at + 256 * bus});
      out.push_back({uint32_t((stop - at + bus - 1) / bus)});
      at = (stop + bus - 1) / bus * bus;
    }
  }
  return out;
}

enum class EventKind : uint8_t { Fetch, FetchDone, Dispatch, Try, BurstIssue, BurstDone, Done, Dram };

struct Event {
  uint64_t time, order;
  EventKind kind;
  int module;
  bool operator>(const Event& o) const { return time != o.time ? time > o.time : order > o.order; }
};

class Model {
 public:
  Model(const std::vector<Instruction>& s, const AccelConfig& c, const PerfParams& p, std::vector<InsnTiming>* timings)
      : stream_(s), config_(c), p_(p), arrive_(s.size(), 0), timings_(timings) {
    if (timings_) timings_->assign(s.size(), {});
    insn_beats_ = uint32_t(std::max(1, 16 / c.dram_bus_bytes()));
  }

  PerfEstimate run() {
    schedule(p_.start_overhead, EventKind::Fetch, -1);
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.time;
      switch (e.kind) {
        case EventKind::Fetch:
          fetch();
          break;
        case EventKind::FetchDone:
          fetch_done();
          break;
        case EventKind::Dram:
          if (e.module == int(dram_version_)) dram_update();
          break;
        case EventKind::Dispatch:
          dispatch();
          break;
        case EventKind::Try:
          try_take(e.module);
          break;
        case EventKind::BurstIssue:
          issue_bursts(e.module);
          break;
        case EventKind::BurstDone:
          burst_done(e.module);
          break;
        case EventKind::Done:
          done(e.module);
          break;
      }
      if (finished_) break;
    }
    // A stream without FINISH (a driver's stream before it is finalized) ends with its last instruction.
    if (!finished_ && executed_ < stream_.size()) deadlock();
    est_.cycles = finish_time_ + p_.end_overhead;
    est_.dram_busy_cycles = uint64_t(dram_busy_);
    return est_;
  }

 private:
  struct ModuleState {
    std::deque<std::pair<size_t, uint64_t>> queue;  // (instruction, cycle it reaches the head)
    bool busy = false;
    uint64_t free_at = 0;  // the cycle it can take the next instruction
    size_t insn = 0;
    uint64_t exec_start = 0;
    std::vector<Burst> bursts;  // the DMA's bursts
    size_t next_burst = 0, bursts_done = 0;
    uint32_t in_flight = 0;
    bool issue_pending = false;
    uint64_t last_issue = 0;
  };

  void schedule(uint64_t t, EventKind k, int module) { events_.push({t, order_++, k, module}); }

  // The DRAM: one read queue and one write queue, each served in order, sharing the bandwidth
  // (a beat each way in the same cycle when both have one, as the RTL's DRAM model's credit
  // allows): a fluid model, advanced to each event and woken at the next burst's end. Requester
  // -1 is fetch.
  struct DramBurst {
    uint64_t ready;    // the cycle its first beat may go
    double remaining;  // beats
    int requester;
  };
  void read_request(uint64_t ready, uint32_t beats, int requester) {
    dram_advance();
    reads_.push_back({ready, double(beats), requester});
    dram_schedule();
  }
  void write_request(uint32_t beats, int requester) {
    dram_advance();
    writes_.push_back({now_ + 1, double(beats), requester});
    dram_schedule();
  }
  bool active(const std::deque<DramBurst>& q, double t) const { return !q.empty() && double(q.front().ready) <= t; }
  // Where the DRAM stands at dram_time_: which queues move a beat (both share the bandwidth), when
  // their front bursts end, and the next time anything changes (a burst ends, or the front of an
  // idle queue may start); infinity with both queues empty.
  struct DramStep {
    bool r, w;
    double share, end_r, end_w, next;
  };
  DramStep dram_step() const {
    const double rate = p_.dram_bytes_per_cycle / double(config_.dram_bus_bytes());  // beats a cycle, both ways
    const double never = std::numeric_limits<double>::infinity();
    DramStep s;
    s.r = active(reads_, dram_time_), s.w = active(writes_, dram_time_);
    s.share = s.r && s.w ? rate / 2 : rate;
    s.end_r = s.r ? dram_time_ + reads_.front().remaining / s.share : never;
    s.end_w = s.w ? dram_time_ + writes_.front().remaining / s.share : never;
    s.next = std::min(s.end_r, s.end_w);
    if (!reads_.empty() && !s.r) s.next = std::min(s.next, double(reads_.front().ready));
    if (!writes_.empty() && !s.w) s.next = std::min(s.next, double(writes_.front().ready));
    return s;
  }
  // Progress from dram_time_ to now_, ending the bursts whose last beat went by now. Each step
  // ends a front burst or lets one start, so the loop ends; a burst ends at the time computed for
  // it, not when a floating-point remainder reaches zero.
  void dram_advance() {
    const double rate = p_.dram_bytes_per_cycle / double(config_.dram_bus_bytes());
    for (;;) {
      DramStep s = dram_step();
      double to = std::min(s.next, double(now_));
      double dt = std::max(0.0, to - dram_time_);
      if (s.r) reads_.front().remaining -= dt * s.share;
      if (s.w) writes_.front().remaining -= dt * s.share;
      dram_busy_ += dt * ((s.r ? s.share : 0) + (s.w ? s.share : 0)) / rate;
      dram_time_ = std::max(dram_time_, to);
      if (s.next > double(now_)) return;
      if (s.r && s.end_r <= s.next) {
        burst_served(reads_.front().requester, false);
        reads_.pop_front();
      }
      if (s.w && s.end_w <= s.next) {
        burst_served(writes_.front().requester, true);
        writes_.pop_front();
      }
    }
  }
  // Wakes the DRAM when the next burst would end (or its first beat may go), if nothing comes first.
  void dram_schedule() {
    double next = dram_step().next;
    if (next == std::numeric_limits<double>::infinity()) return;
    ++dram_version_;
    // Strictly after the last advance (everything ending by now_ has ended): waking at a cycle that
    // rounds below a burst's end would only reschedule itself.
    schedule(std::max(now_ + 1, uint64_t(std::ceil(next))), EventKind::Dram, int(dram_version_));
  }
  void dram_update() {
    dram_advance();
    dram_schedule();
  }
  // A burst's last beat went: a read's data is there, a write's response comes after the latency.
  void burst_served(int requester, bool write) {
    uint64_t at = std::max(now_, uint64_t(std::ceil(dram_time_ - 1e-9)));
    if (requester < 0)
      schedule(at, EventKind::FetchDone, -1);
    else
      schedule(write ? at + p_.dram_latency : at, EventKind::BurstDone, requester);
  }

  // Fetch: one burst at a time, for as many instructions as the buffer has room for.
  void fetch() {
    if (fetch_busy_ || fetched_ == stream_.size()) return;
    size_t room = p_.fetch_buffer - (fetched_ - dispatched_);
    if (room == 0) return;
    size_t n = std::min(room, stream_.size() - fetched_);
    n = std::min(n, 256 - fetched_ % 256);  // 16-byte instructions: 256 to a 4 KiB page
    fetch_count_ = n;
    fetch_busy_ = true;
    read_request(now_ + p_.dram_latency + p_.read_overhead, uint32_t(n) * insn_beats_, -1);
  }
  void fetch_done() {
    for (size_t k = 0; k < fetch_count_; ++k) arrive_[fetched_ + k] = now_;
    fetched_ += fetch_count_;
    fetch_busy_ = false;
    schedule(now_ + p_.dispatch_delay, EventKind::Dispatch, -1);
    fetch();
  }

  // In-order dispatch, one instruction a cycle, into a queue with room.
  void dispatch() {
    if (dispatched_ > 0 && now_ < last_dispatch_ + 1) {
      schedule(last_dispatch_ + 1, EventKind::Dispatch, -1);
      return;
    }
    if (dispatched_ < fetched_) {
      size_t k = dispatched_;
      uint64_t ready = arrive_[k] + p_.dispatch_delay;
      if (ready > now_) {
        schedule(ready, EventKind::Dispatch, -1);
      } else {
        int m = int(stream_[k].module());
        ModuleState& ms = modules_[m];
        if (ms.queue.size() >= p_.queue_depth) {
          dispatch_blocked_ = true;  // a take wakes it
        } else {
          ms.queue.emplace_back(k, now_ + 1);
          ++dispatched_;
          last_dispatch_ = now_;
          schedule(now_ + 1, EventKind::Try, m);
          if (dispatched_ < fetched_) schedule(now_ + 1, EventKind::Dispatch, -1);
        }
      }
    }
    fetch();
  }

  // Token queues: load->compute, compute->load, compute->store, store->compute; each token's cycle.
  std::deque<uint64_t>& tokens(Module m, bool prev) {
    if (m == Module::Load) return c2l_;  // load's next is compute
    if (m == Module::Compute) return prev ? l2c_ : s2c_;
    return c2s_;  // store's prev is compute
  }
  std::deque<uint64_t>& pushed(Module m, bool prev) {
    if (m == Module::Load) return l2c_;
    if (m == Module::Compute) return prev ? c2l_ : c2s_;
    return s2c_;
  }

  void try_take(int m) {
    ModuleState& ms = modules_[m];
    if (ms.busy || ms.queue.empty() || now_ < ms.free_at || now_ < ms.queue.front().second) return;
    const Instruction& i = stream_[ms.queue.front().first];
    Module mod = Module(m);
    for (bool prev : {true, false}) {
      bool pops = prev ? i.dep.pop_prev : i.dep.pop_next;
      if (!pops) continue;
      auto& q = tokens(mod, prev);
      if (q.empty()) return;  // a push wakes it
      if (q.front() > now_) {
        schedule(q.front(), EventKind::Try, m);
        return;
      }
    }
    uint64_t ready = std::max(ms.free_at, ms.queue.front().second);
    est_.stall[m] += now_ - ready;
    if (i.dep.pop_prev) tokens(mod, true).pop_front();
    if (i.dep.pop_next) tokens(mod, false).pop_front();
    ms.insn = ms.queue.front().first;
    ms.queue.pop_front();
    ms.busy = true;
    ms.exec_start = now_ + 1;
    if (dispatch_blocked_) {
      dispatch_blocked_ = false;
      schedule(now_ + 1, EventKind::Dispatch, -1);
    }
    uint64_t iters = uint64_t(i.uop_end - i.uop_begin) * i.iter_out * i.iter_in;
    switch (i.opcode) {
      case Opcode::Gemm:
        if (!i.reset) est_.gemm_cycles += iters;
        schedule(ms.exec_start + iters + p_.pipeline_overhead, EventKind::Done, m);
        break;
      case Opcode::Alu: {
        // One accumulator read port: an operand from the register file takes a second cycle (MOV
        // reads only its operand); MUL (by an immediate too) and SHR by a register go through a
        // four-stage unit, one every fifth.
        uint64_t interval = i.alu_op == AluOp::Mul || (i.alu_op == AluOp::Shr && !i.use_imm) ? 5
                            : reads_two_entries(i)                                           ? 2
                                                                                             : 1;
        schedule(ms.exec_start + iters * interval + p_.pipeline_overhead, EventKind::Done, m);
        break;
      }
      case Opcode::Finish:
        schedule(ms.exec_start, EventKind::Done, m);
        break;
      case Opcode::Load:
      case Opcode::Store:
        ms.bursts = bursts_of(i, config_);
        ms.next_burst = ms.bursts_done = 0;
        ms.in_flight = 0;
        if (ms.bursts.empty()) {
          schedule(ms.exec_start + p_.dma_setup + p_.dma_tail, EventKind::Done, m);
        } else {
          ms.issue_pending = true;
          ms.last_issue = 0;
          schedule(ms.exec_start + p_.dma_setup, EventKind::BurstIssue, m);
        }
        break;
    }
  }

  void issue_bursts(int m) {
    ModuleState& ms = modules_[m];
    ms.issue_pending = false;
    if (ms.next_burst == ms.bursts.size() || ms.in_flight >= p_.bursts_in_flight) return;
    const Burst& b = ms.bursts[ms.next_burst++];
    ++ms.in_flight;
    ms.last_issue = now_;
    if (stream_[ms.insn].opcode == Opcode::Store)  // data beats out, then the response after the latency
      write_request(b.beats, m);
    else
      read_request(now_ + p_.dram_latency + p_.read_overhead, b.beats, m);
    if (ms.next_burst < ms.bursts.size() && ms.in_flight < p_.bursts_in_flight) {
      ms.issue_pending = true;
      schedule(now_ + p_.burst_issue_gap, EventKind::BurstIssue, m);
    }
  }

  void burst_done(int m) {
    ModuleState& ms = modules_[m];
    --ms.in_flight;
    if (++ms.bursts_done == ms.bursts.size()) {
      schedule(now_ + p_.dma_tail, EventKind::Done, m);
    } else if (!ms.issue_pending && ms.next_burst < ms.bursts.size()) {
      ms.issue_pending = true;
      schedule(std::max(now_, ms.last_issue + p_.burst_issue_gap), EventKind::BurstIssue, m);
    }
  }

  void done(int m) {
    ModuleState& ms = modules_[m];
    const Instruction& i = stream_[ms.insn];
    est_.busy[m] += now_ - ms.exec_start;
    ++executed_;
    finish_time_ = std::max(finish_time_, now_);
    if (timings_) (*timings_)[ms.insn] = {ms.exec_start, now_};
    ms.busy = false;
    ms.free_at = now_;
    Module mod = Module(m);
    auto push = [&](bool prev) {
      pushed(mod, prev).push_back(now_);
      int neighbour = prev ? m - 1 : m + 1;
      schedule(now_, EventKind::Try, neighbour);
    };
    if (i.dep.push_prev) push(true);
    if (i.dep.push_next) push(false);
    if (i.opcode == Opcode::Finish) {
      finished_ = true;
      finish_time_ = now_;
      return;
    }
    schedule(now_, EventKind::Try, m);
  }

  [[noreturn]] void deadlock() {
    std::ostringstream msg;
    msg << "performance model: dependency deadlock: ";
    for (int m = 0; m < 3; ++m)
      if (!modules_[m].queue.empty())
        msg << to_string(Module(m)) << " module waits at instruction " << modules_[m].queue.front().first << " ("
            << disassemble(stream_[modules_[m].queue.front().first]) << "); ";
    if (dispatched_ < stream_.size()) msg << "instruction " << dispatched_ << " not dispatched";
    LOOM_THROW(DeviceError, msg.str());
  }

  const std::vector<Instruction>& stream_;
  const AccelConfig& config_;
  const PerfParams& p_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t order_ = 0, now_ = 0;
  double dram_time_ = 0, dram_busy_ = 0;
  uint64_t dram_version_ = 0;
  std::deque<DramBurst> reads_, writes_;
  size_t fetch_count_ = 0;
  uint32_t insn_beats_ = 1;
  std::vector<uint64_t> arrive_;  // the cycle each instruction's last beat arrived
  size_t fetched_ = 0, dispatched_ = 0, executed_ = 0;
  bool fetch_busy_ = false, dispatch_blocked_ = false, finished_ = false;
  uint64_t last_dispatch_ = 0, finish_time_ = 0;
  ModuleState modules_[3];
  std::deque<uint64_t> l2c_, c2l_, c2s_, s2c_;
  PerfEstimate est_;
  std::vector<InsnTiming>* timings_;
};

}  // namespace

void check_params(const PerfParams& p) {
  if (!(p.dram_bytes_per_cycle > 0 && p.dram_bytes_per_cycle <= 4096))
    LOOM_THROW(ConfigError, "performance model: dram_bytes_per_cycle must be in (0, 4096], is ",
               p.dram_bytes_per_cycle);
  const std::pair<const char*, uint32_t> positive[] = {{"fetch_buffer", p.fetch_buffer},
                                                       {"queue_depth", p.queue_depth},
                                                       {"bursts_in_flight", p.bursts_in_flight},
                                                       {"burst_issue_gap", p.burst_issue_gap}};
  for (auto [name, value] : positive)
    if (value == 0) LOOM_THROW(ConfigError, "performance model: ", name, " must be at least 1, is 0");
}

PerfEstimate estimate_cycles(const std::vector<Instruction>& stream, const AccelConfig& config,
                             const PerfParams& params, std::vector<InsnTiming>* timings) {
  check_params(params);
  return Model(stream, config, params, timings).run();
}

}  // namespace loom::sim
