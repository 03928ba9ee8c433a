// A timeline of the RTL's activity, written as a Chrome / Perfetto trace (JSON trace-event
// format): one group ("process") per run, named by the run's label (a model's kernel); in it one
// track per module: fetch (its instruction bursts), load, compute and store (each instruction's
// busy interval, "#12 busy", and its token waits, "#12 waits for a token"), the DMA bursts per
// requester as async slices, and counters of each module's busy share per window of cycles.
// The time axis counts cycles (1 us on the axis = 1 cycle). Events stream to the file as they
// close, so memory stays bounded; a cycle window and an event limit bound the file, and reaching
// the limit is recorded in the file and reported once on stderr.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "rtl_model.h"

namespace loom::sim::rtl {

struct TimelineOptions {
  std::string path;
  uint64_t begin = 0, end = UINT64_MAX;  // cycles recorded (counted from the device's creation)
  uint64_t max_events = 2'000'000;
  uint32_t counter_window = 1024;  // cycles per busy-share sample
};

class Timeline {
 public:
  explicit Timeline(TimelineOptions opt);  // throws DeviceError if the file cannot be written
  ~Timeline();                             // closes open slices and the JSON array

  void begin_run(uint64_t cycle, const std::string& label);
  void end_run(uint64_t cycle);
  // Once per cycle, with the settled ports and the modules' state.
  void sample(uint64_t cycle, const Probes& probes, const Inputs& in, const Outputs& out);

  uint64_t events() const { return events_; }
  bool truncated() const { return truncated_; }

 private:
  struct Open {
    bool on = false;
    uint32_t index = 0;
    uint64_t start = 0;
  };
  struct Burst {
    uint64_t id, start;
    uint32_t beats;
    uint64_t addr;
  };
  void close_module(int m, uint64_t cycle);
  void slice(int tid, const std::string& name, uint64_t start, uint64_t end, uint32_t index);
  void async(char phase, int tid, const char* name, uint64_t id, uint64_t ts, const std::string& args);
  void counters(uint64_t cycle);
  void emit(const std::string& event);
  bool recording(uint64_t cycle) const { return run_ > 0 && cycle >= opt_.begin && cycle < opt_.end && !truncated_; }

  TimelineOptions opt_;
  std::FILE* file_ = nullptr;
  uint64_t events_ = 0, next_burst_id_ = 1;
  bool truncated_ = false, first_ = true;
  int run_ = 0;  // the current group's pid; 0 before the first run
  std::array<Open, 3> busy_{}, stall_{};
  std::array<std::deque<Burst>, 5> reads_;  // by ARID
  std::deque<Burst> writes_;                // AW accepted, waiting for B
  std::array<uint32_t, 3> window_busy_{};
  uint64_t window_start_ = 0;
  uint64_t last_cycle_ = 0;
};

}  // namespace loom::sim::rtl
