// Coverage waivers: toggle points that a regression cannot reach, each with its reason, so that a
// coverage figure measures what tests can still improve. A waiver names signals (as
// "module.signal") and optionally their bits, and says why no run toggles them:
//   structural - no input can: the bits are constant by construction (address bits above what a
//                DMA can form, fields the decoder has already checked, tied-off signals);
//   bounded    - only a run beyond any bounded regression can (instruction indices past 2^16,
//                cycle counts past 2^22).
// The file (hw/rtl/coverage_waivers.json, named by a regression manifest's "coverage_waivers"):
//   {"toggle": [{"signals": ["loom_accel.cycles", "loom_ctrl.cycles_i"], "bits": "[63:22]",
//                "class": "bounded", "reason": "runs of 4.2 million cycles or more"}, ...]}
// Each signal of an entry is a waiver of its own (RtlToggleWaiver) with the entry's bits, class
// and reason.
// A waived point that a run does toggle is not waived: it counts as hit, and the report lists
// the waiver as contradicted (its reason is wrong, or the RTL changed).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loom::sim {

enum class RtlWaiverClass { Structural, Bounded };
const char* to_string(RtlWaiverClass c);  // "structural", "bounded"

struct RtlToggleWaiver {
  std::string module, signal;
  std::string bits;          // as written: "[31:12]", "[63:41,7]"; "" waives every bit of the signal
  std::vector<long> ranges;  // pairs (high, low), inclusive; empty with `bits` ""
  RtlWaiverClass waiver_class = RtlWaiverClass::Structural;
  std::string reason;
  bool covers(long bit) const;  // bit -1: a one-bit signal (waived only by a waiver without bits)
};

class RtlWaivers {
 public:
  // Error naming `source` and the entry (index and field) for malformed waivers: unknown keys,
  // no signals, a signal without its module, a missing reason, an unknown class, bits that are
  // not Verilog ranges.
  static RtlWaivers parse(const std::string& text, const std::string& source);
  static RtlWaivers load(const std::string& path);  // Error naming the file when unreadable

  const std::string& source() const { return source_; }
  const std::vector<RtlToggleWaiver>& toggles() const { return toggles_; }
  bool empty() const { return toggles_.empty(); }
  // The first waiver of signal `signal[bit]` in `module` (bit -1: a one-bit signal), or -1.
  int find(const std::string& module, const std::string& signal, long bit) const;

 private:
  std::string source_;
  std::vector<RtlToggleWaiver> toggles_;
  std::map<std::pair<std::string, std::string>, std::vector<int>> by_signal_;  // (module, signal) -> toggles_
};

}  // namespace loom::sim
