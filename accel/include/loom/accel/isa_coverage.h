// Functional coverage of the ISA: the bins a regression's instruction streams should reach,
// declared in one place (isa_coverage.cc) beside the ISA's field table. A bin is a named class of
// instructions (a LOAD of accumulators with padding on the left, a GEMM that resets with an outer
// loop, an ALU shift by a negative immediate, a STORE that pops a token from compute, ...);
// sampling a stream counts how many of its instructions fall in each; DMA bins (a row across a
// 4 KiB page, a transfer ending at its segment's end) are sampled from a program, whose config and
// memory segments place its transfers. Coverage of several
// streams, programs or regression jobs merges by adding the counts.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/accel/isa.h"
#include "loom/accel/program.h"
#include "loom/accel/program_gen.h"

namespace loom::accel {

struct CoverageBin {
  std::string group;  // "load inp", "gemm", "alu", "store", "deps compute", ...
  std::string name;   // "pad y0 > 0"
  std::string id() const { return group + ": " + name; }
};

// Every bin, in a fixed order (the model's declaration).
const std::vector<CoverageBin>& isa_coverage_bins();

class IsaCoverage {
 public:
  IsaCoverage();
  // Counts each instruction of `stream` in every instruction bin it falls in.
  void sample(const std::vector<Instruction>& stream);
  // The program's stream, and its transfers in the DMA bins (which need its config and memory).
  void sample(const Program& program);
  void merge(const IsaCoverage& other);
  // Adds `hits` to the bin whose id() is `id` (a ConfigError naming `origin` for no such bin).
  void add(const std::string& id, uint64_t hits, const std::string& origin);
  const std::vector<uint64_t>& hits() const { return hits_; }  // per isa_coverage_bins() entry
  size_t bins_hit() const;
  std::vector<CoverageBin> holes() const;  // the bins no sampled instruction fell in
  // {"bins": [{"group", "name", "hits"}...], "hit": N, "total": M}; parse reads it back (a
  // ConfigError naming `origin` for a file of another model: unknown or missing bins).
  std::string to_json() const;
  static IsaCoverage parse(const std::string& json_text, const std::string& origin);
  static IsaCoverage load(const std::string& path);  // parse of a file (ConfigError naming it)
  // One line per group ("load inp  9/10 bins"), then every hole.
  std::string report() const;

 private:
  std::vector<uint64_t> hits_;
};

// Coverage-directed generation: `base` with each instruction kind's weight raised toward the
// largest weight by the share of its bins (its group's, its DMA bins, and the dependency flags its
// switches make) that `seen` has not hit, times `boost`; a kind whose bins are all hit keeps its
// weight, and one the constraints leave out (weight 0) stays out.
ProgramConstraints toward_holes(const ProgramConstraints& base, const IsaCoverage& seen, double boost = 8);

}  // namespace loom::accel
