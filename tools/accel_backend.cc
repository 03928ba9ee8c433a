#include "accel_backend.h"

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::tools {

std::unique_ptr<AccelDevice> open_accel_backend(const Options& opt, const accel::AccelConfig& config) {
  std::string backend = opt.get("backend", "fsim");
  nlohmann::json j = nlohmann::json::parse(config.to_json());
  nlohmann::json rtl = nlohmann::json::object();
  for (auto [flag, key] : {std::pair{"dram-latency", "dram_latency"}, std::pair{"cycle-limit", "cycle_limit"},
                           std::pair{"fst-begin", "fst_begin"}, std::pair{"fst-end", "fst_end"}})
    if (opt.has(flag)) rtl[key] = opt.get_int(flag, 0);
  if (opt.has("dram-bytes-per-cycle")) rtl["dram_bytes_per_cycle"] = std::stod(opt.get("dram-bytes-per-cycle"));
  if (opt.has("fst")) rtl["fst"] = opt.get("fst");
  if (!rtl.empty()) {
    if (backend != "rtl") LOOM_THROW(Error, "--dram-latency, --dram-bytes-per-cycle, --cycle-limit and --fst need --backend rtl");
    j["rtl"] = rtl;
  }
  return make_accel_device(backend, j.dump());
}

}  // namespace loom::tools
