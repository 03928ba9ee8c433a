#include "timeline.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::sim::rtl {

namespace {
// Track ids within a run's group.
constexpr int kFetch = 1, kModule0 = 2, kDma0 = 5, kStoreDma = 9;
constexpr const char* kModuleNames[3] = {"load", "compute", "store"};
constexpr const char* kRequesters[5] = {"fetch", "DMA inp", "DMA wgt", "DMA uop", "DMA acc"};

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}
}  // namespace

Timeline::Timeline(TimelineOptions opt) : opt_(std::move(opt)) {
  file_ = std::fopen(opt_.path.c_str(), "w");
  if (!file_) LOOM_THROW(DeviceError, "trace: cannot write '", opt_.path, "': ", std::strerror(errno));
  std::fputs(
      "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"time axis\": \"1 us = 1 accelerator cycle\"},\n"
      "\"traceEvents\": [\n",
      file_);
}

Timeline::~Timeline() {
  if (run_ > 0) end_run(last_cycle_ + 1);
  if (truncated_) {
    std::ostringstream m;
    m << "{\"name\": \"trace truncated\", \"ph\": \"i\", \"s\": \"g\", \"pid\": " << run_ << ", \"ts\": " << last_cycle_
      << ", \"args\": {\"reason\": \"the limit of " << opt_.max_events << " events was reached\"}}";
    std::fputs(first_ ? "" : ",\n", file_);
    std::fputs(m.str().c_str(), file_);
  }
  std::fputs("\n]}\n", file_);
  std::fclose(file_);
}

void Timeline::emit(const std::string& event) {
  if (truncated_) return;
  if (events_ >= opt_.max_events) {
    truncated_ = true;
    std::cerr << "loom: trace " << opt_.path << ": the limit of " << opt_.max_events << " events was reached at cycle "
              << last_cycle_ << "; later activity is not recorded\n";
    return;
  }
  std::fputs(first_ ? "" : ",\n", file_);
  std::fputs(event.c_str(), file_);
  first_ = false;
  ++events_;
}

void Timeline::begin_run(uint64_t cycle, const std::string& label) {
  if (run_ > 0) end_run(cycle);
  ++run_;
  std::ostringstream m;
  m << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << run_
    << ", \"args\": {\"name\": " << quoted(label.empty() ? "run " + std::to_string(run_) : label) << "}}";
  emit(m.str());
  auto thread = [&](int tid, const std::string& name) {
    std::ostringstream t;
    t << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << run_ << ", \"tid\": " << tid
      << ", \"args\": {\"name\": " << quoted(name) << "}}";
    emit(t.str());
    std::ostringstream o;
    o << "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " << run_ << ", \"tid\": " << tid
      << ", \"args\": {\"sort_index\": " << tid << "}}";
    emit(o.str());
  };
  thread(kFetch, "fetch");
  for (int m = 0; m < 3; ++m) thread(kModule0 + m, kModuleNames[m]);
  for (int r = 1; r < 5; ++r) thread(kDma0 + r - 1, kRequesters[r]);
  thread(kStoreDma, "DMA out");
  window_start_ = cycle;
  window_busy_ = {};
}

void Timeline::end_run(uint64_t cycle) {
  for (int m = 0; m < 3; ++m) close_module(m, cycle);
  for (auto& q : reads_) q.clear();
  writes_.clear();
}

void Timeline::slice(int tid, const std::string& name, uint64_t start, uint64_t end, uint32_t index) {
  if (end <= std::max(start, opt_.begin) || start >= opt_.end) return;
  start = std::max(start, opt_.begin);
  end = std::min(end, opt_.end);
  std::ostringstream m;
  m << "{\"name\": " << quoted(name) << ", \"ph\": \"X\", \"pid\": " << run_ << ", \"tid\": " << tid
    << ", \"ts\": " << start << ", \"dur\": " << end - start << ", \"args\": {\"instruction\": " << index << "}}";
  emit(m.str());
}

void Timeline::async(char phase, int tid, const char* name, uint64_t id, uint64_t ts, const std::string& args) {
  std::ostringstream m;
  m << "{\"name\": " << quoted(name) << ", \"cat\": \"dma\", \"ph\": \"" << phase << "\", \"id\": " << id
    << ", \"pid\": " << run_ << ", \"tid\": " << tid << ", \"ts\": " << ts;
  if (!args.empty()) m << ", \"args\": {" << args << "}";
  m << "}";
  emit(m.str());
}

void Timeline::close_module(int m, uint64_t cycle) {
  const std::string who = "#";
  if (busy_[m].on)
    slice(kModule0 + m, who + std::to_string(busy_[m].index) + " busy", busy_[m].start, cycle, busy_[m].index);
  if (stall_[m].on)
    slice(kModule0 + m, who + std::to_string(stall_[m].index) + " waits for a token", stall_[m].start, cycle,
          stall_[m].index);
  busy_[m].on = stall_[m].on = false;
}

void Timeline::counters(uint64_t cycle) {
  const double n = double(cycle - window_start_);
  if (n <= 0) return;
  if (window_start_ >= opt_.begin && window_start_ < opt_.end) {
    std::ostringstream m;
    m << "{\"name\": \"busy share\", \"ph\": \"C\", \"pid\": " << run_ << ", \"ts\": " << window_start_
      << ", \"args\": {\"load\": " << window_busy_[0] / n << ", \"compute\": " << window_busy_[1] / n
      << ", \"store\": " << window_busy_[2] / n << "}}";
    emit(m.str());
  }
  window_start_ = cycle;
  window_busy_ = {};
}

void Timeline::sample(uint64_t cycle, const Probes& probes, const Inputs& in, const Outputs& out) {
  last_cycle_ = cycle;
  if (run_ == 0 || truncated_) return;
  for (int m = 0; m < 3; ++m) {
    const ModuleProbe& p = probes[size_t(m)];
    window_busy_[size_t(m)] += p.busy;
    auto track = [&](Open& o, bool on, const char* what) {
      if (o.on && (!on || o.index != p.index)) {
        slice(kModule0 + m, "#" + std::to_string(o.index) + what, o.start, cycle, o.index);
        o.on = false;
      }
      if (on && !o.on) o = {true, p.index, cycle};
    };
    track(busy_[size_t(m)], p.busy, " busy");
    track(stall_[size_t(m)], p.stalled, " waits for a token");
  }
  if (cycle - window_start_ >= opt_.counter_window) counters(cycle);
  // DMA bursts: from the request's handshake to the last beat (reads) or the write response.
  const bool rec = recording(cycle);
  if (out.m_arvalid && in.m_arready && out.m_arid < reads_.size()) {
    Burst b{next_burst_id_++, cycle, out.m_arlen + 1, out.m_araddr};
    reads_[out.m_arid].push_back(b);
    if (rec) {
      std::ostringstream a;
      a << "\"address\": \"0x" << std::hex << b.addr << std::dec << "\", \"beats\": " << b.beats;
      async('b', out.m_arid == 0 ? kFetch : kDma0 + int(out.m_arid) - 1, kRequesters[out.m_arid], b.id, cycle, a.str());
    }
  }
  if (in.m_rvalid && out.m_rready && in.m_rlast && in.m_rid < reads_.size() && !reads_[in.m_rid].empty()) {
    const Burst b = reads_[in.m_rid].front();
    reads_[in.m_rid].pop_front();
    if (rec && b.start >= opt_.begin)
      async('e', in.m_rid == 0 ? kFetch : kDma0 + int(in.m_rid) - 1, kRequesters[in.m_rid], b.id, cycle + 1, "");
  }
  if (out.m_awvalid && in.m_awready) {
    Burst b{next_burst_id_++, cycle, out.m_awlen + 1, out.m_awaddr};
    writes_.push_back(b);
    if (rec) {
      std::ostringstream a;
      a << "\"address\": \"0x" << std::hex << b.addr << std::dec << "\", \"beats\": " << b.beats;
      async('b', kStoreDma, "DMA out", b.id, cycle, a.str());
    }
  }
  if (in.m_bvalid && out.m_bready && !writes_.empty()) {
    const Burst b = writes_.front();
    writes_.pop_front();
    if (rec && b.start >= opt_.begin) async('e', kStoreDma, "DMA out", b.id, cycle + 1, "");
  }
}

}  // namespace loom::sim::rtl
