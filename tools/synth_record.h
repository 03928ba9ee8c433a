// The record of one yosys run of `loom hw-report`: the statistics yosys wrote (stat -json) and the
// key of everything that decided them (yosys' version, the script, the generated package and each
// RTL file), so that a later run with the same key reports from the record instead of spending
// minutes in yosys. The key is checked against the inputs the record lists, so a record edited by
// hand (or damaged) is an error, not a wrong answer.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace loom::tools {

// Input name ("yosys", "script", "loom_accel_pkg.sv", "rtl/loom_compute.sv", ...) -> its content hash.
using SynthInputs = std::map<std::string, std::string>;

struct SynthRecord {
  std::string key;            // synth_key(inputs)
  SynthInputs inputs;         // what the key was made of: names the inputs that changed on a mismatch
  std::string yosys_version;  // `yosys -V`, for people reading the record
  std::string stat_json;      // yosys' `stat -json` output, as yosys wrote it
};

// The inputs of a run: `yosys -V`'s line, the script with the run's folder written as $OUT and the
// RTL folder as $RTL (so that the key does not depend on where the run happens), the package and
// every RTL file (named rtl/<file>) by content.
SynthInputs synth_inputs(const std::string& yosys_version, const std::string& script,
                         const std::filesystem::path& out_dir, const std::filesystem::path& rtl_dir,
                         const std::filesystem::path& package, const std::vector<std::filesystem::path>& rtl_files);
// A digest of all of `inputs` (32 hex digits).
std::string synth_key(const SynthInputs& inputs);

// Reads a record; a ConfigError naming `file` when it is not one (not JSON, a field missing, or a
// key that is not its inputs').
SynthRecord read_synth_record(const std::filesystem::path& file);
void write_synth_record(const std::filesystem::path& file, const SynthRecord& record);

// The inputs that differ between a record and this run ("rtl/loom_compute.sv changed",
// "rtl/loom_new.sv added", ...), in name order.
std::vector<std::string> changed_synth_inputs(const SynthInputs& recorded, const SynthInputs& now);

}  // namespace loom::tools
