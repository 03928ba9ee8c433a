// An accelerator backend's options, declared once beside its factory: each option's key, kind,
// range and help. The declaration is the one description of a backend's options: the backend
// reads its options section through it (read_backend_options), `loom sim/run/accel-run` make
// their flags from it (--dram-latency for "dram_latency"), and `loom regress` checks a manifest's
// device sections against it before any job runs.
//
//   register_accel_backend_options("rtl", {
//       BackendOption::count("cycle_limit", 1, 1e15, "fail a run without FINISH after this many cycles", "4e9"),
//       BackendOption::output_file("fst", "write a waveform (FST) of the run to this file"),
//       BackendOption::count("fst_end", 1, 1e15, "the waveform stops before this cycle").needing("fst")});
//   BackendOptionValues v = read_backend_options("rtl", section_json);
//   uint64_t limit = v.count("cycle_limit", 4'000'000'000);
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace loom {

struct BackendOption {
  enum class Kind {
    Count,       // a non-negative integer in [min, max]
    Number,      // a number in [min, max]; min_open / max_open exclude an end
    Flag,        // true or false
    Choice,      // one of `choices`
    OutputFile,  // a path the backend writes (not empty)
  };
  std::string key;  // the JSON field, e.g. "dram_latency"
  Kind kind = Kind::Count;
  double min = 0, max = 0;
  bool min_open = false, max_open = false;
  std::vector<std::string> choices;
  std::string needs;     // another option this one only makes sense with ("fst_begin" needs "fst")
  std::string help;      // one line: what it sets
  std::string fallback;  // the value when not given, for the help ("" if none worth showing)
  std::string flag;      // the command-line flag when the key's own would say too little ("" for it)

  enum class Ends { Closed, OpenBelow, OpenAbove };
  static BackendOption count(std::string key, double min, double max, std::string help, std::string fallback = "");
  static BackendOption number(std::string key, double min, double max, Ends ends, std::string help,
                              std::string fallback = "");
  static BackendOption boolean(std::string key, std::string help, std::string fallback = "");
  static BackendOption choice(std::string key, std::vector<std::string> choices, std::string help,
                              std::string fallback = "");
  static BackendOption output_file(std::string key, std::string help);
  BackendOption needing(std::string other) const;       // this option, given only together with `other`
  BackendOption with_flag(std::string cli_flag) const;  // "--interleave-seed" for "seed"

  std::string cli_flag() const;    // `flag`, else "--" and the key with '-' for '_'
  std::string range_text() const;  // "an integer in [1, 1024]", "one of fixed, banked", ...
};
using BackendOptionSchema = std::vector<BackendOption>;

// Declares `backend`'s options (replacing an earlier declaration). A backend that declares none
// takes no options section.
void register_accel_backend_options(const std::string& backend, BackendOptionSchema schema);
// The options `backend` declared (empty when it declared none or is not registered).
const BackendOptionSchema& accel_backend_options(const std::string& backend);

// A backend's options as read from its section: every value of its declared kind and range.
class BackendOptionValues {
 public:
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  uint64_t count(const std::string& key, uint64_t fallback) const;
  double number(const std::string& key, double fallback) const;
  bool flag(const std::string& key, bool fallback) const;
  std::string text(const std::string& key, const std::string& fallback) const;  // Choice, OutputFile

 private:
  friend BackendOptionValues read_backend_options(const std::string&, const std::string&);
  std::map<std::string, std::variant<uint64_t, double, bool, std::string>> values_;
};

// Reads `backend`'s options section (a JSON object; "" or "{}" when none was given) against its
// declaration. ConfigError naming the backend and the key for an unknown key (with the closest
// declared one), a value of the wrong kind or out of range, or an option given without the one it
// needs.
BackendOptionValues read_backend_options(const std::string& backend, const std::string& section_json);

}  // namespace loom
