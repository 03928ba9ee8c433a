// Coverage of the RTL as Verilator counts it in a coverage build (`--backend rtl --coverage FILE`):
// lines (blocks), branches, toggles of each signal bit, and the RTL's own cover properties (queues
// full, AXI back-pressure, tokens piling up; hw/rtl). The data is Verilator's coverage file
// (what verilator_coverage reads, merges and annotates sources from): loaded, merged point by point,
// written back, and summed per module and kind for reports.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/sim/rtl_waivers.h"

namespace loom::sim {

enum class RtlCoverageKind { Line, Branch, Toggle, CoverProperty };
const char* to_string(RtlCoverageKind k);  // "line", "branch", "toggle", "cover"

// `points` leaves out the `waived` ones (unhit points a waiver names, rtl_waivers.h); the raw
// figure counts them as holes.
struct RtlCoverageFigure {
  uint64_t hit = 0, points = 0, waived = 0;
  double percent() const { return points ? 100.0 * double(hit) / double(points) : 100.0; }
  double raw_percent() const { return points + waived ? 100.0 * double(hit) / double(points + waived) : 100.0; }
};

// What one waiver matched in a run: unhit points it waived, and points it names that were hit
// (a contradiction: they count as hit, and the waiver's reason is wrong).
struct RtlWaiverUse {
  size_t waived = 0, hit = 0;
};

// A cover property of the RTL, one per instance: "loom_accel.load.seq.queue.c_full".
struct RtlCoverProperty {
  std::string instance;  // hierarchical name, without the top's "TOP."
  std::string file;
  int line = 0;
  uint64_t count = 0;
};

// An unhit line, branch or toggle point, for reports that list holes.
struct RtlCoverageHole {
  RtlCoverageKind kind;
  std::string module, file;
  int line = 0;
  std::string what;  // Verilator's comment: "if", "else", "count_q[3]:0->1"
};

// A signal's unhit toggle points: its bits as Verilog ranges, "[31:9]" or "[63:40,7]" (empty for
// a one-bit signal), of its `points` bits.
struct RtlToggleHoles {
  std::string module, signal, bits;
  size_t unhit = 0, points = 0;
};

class RtlCoverage {
 public:
  // Verilator's format: "# SystemC::Coverage-3", then "C '<keys>' COUNT" per point. Malformed
  // text is an Error naming `source` and the line.
  static RtlCoverage parse(const std::string& text, const std::string& source);
  static RtlCoverage load(const std::string& path);  // Error naming the file when unreadable
  void merge(const RtlCoverage& other);              // counts added point by point
  std::string text() const;                          // in Verilator's format
  void save(const std::string& path) const;          // Error naming the file when unwritable
  // Adds this file's points to `path`'s if it exists (otherwise writes them), under a lock on
  // PATH.lock: how several devices, runs or processes accumulate into one file.
  void accumulate_into(const std::string& path) const;

  // Toggle waivers applied by the figures, holes and waiver_uses() below (none by default).
  void set_waivers(RtlWaivers waivers) { waivers_ = std::move(waivers); }
  const RtlWaivers& waivers() const { return waivers_; }
  std::vector<RtlWaiverUse> waiver_uses() const;  // one per waivers().toggles(), in order

  size_t size() const { return counts_.size(); }
  bool empty() const { return counts_.empty(); }

  // Per module ("loom_fifo" for every parameterization of it) and kind. Lines, branches and
  // toggles count each source point once, however many instances and parameterizations it has
  // (their counts summed); cover properties count per instance.
  std::map<std::string, std::map<RtlCoverageKind, RtlCoverageFigure>> by_module() const;
  RtlCoverageFigure total(RtlCoverageKind kind) const;
  std::vector<RtlCoverProperty> cover_properties() const;          // sorted by instance
  std::vector<RtlCoverageHole> holes(RtlCoverageKind kind) const;  // sorted by module, file, line
  // Toggle holes per signal (what a reader can act on: "the upper bits of every index"), the
  // signals with most unhit bits first.
  std::vector<RtlToggleHoles> toggle_holes_by_signal() const;

 private:
  struct Point {
    std::map<std::string, std::string> keys;  // Verilator's short keys: f, l, page, o, h, ...
    RtlCoverageKind kind = RtlCoverageKind::Line;
    bool known_kind = false;  // its page is one of the four kinds
    std::string module;
  };
  // Points keyed by their keys' text as Verilator writes them (hierarchy included).
  std::map<std::string, uint64_t> counts_;
  std::map<std::string, Point> points_;
  RtlWaivers waivers_;
  int waiver_of(const Point& p) const;  // a toggle point's waiver index, or -1
  bool waived(const Point& p, uint64_t count) const { return count == 0 && waiver_of(p) >= 0; }
  // Points summed over instances: key text without the hierarchy (cover properties keep it).
  std::map<std::string, std::pair<const Point*, uint64_t>> sources() const;
};

}  // namespace loom::sim
