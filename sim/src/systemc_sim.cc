// The "systemc" backend: RtlSim with its cycles passing in the SystemC TLM-2.0 platform
// (systemc/platform.cc). Its config JSON may carry a "systemc" object: the rtl backend's options
// (dram_latency, dram_bytes_per_cycle, dram_stall_rate, cycle_limit, fst...) and the memory model
// behind the AXI4 port ("memory": "fixed" | "banked", "banks", "row_bytes", "row_hit_latency",
// "row_miss_latency").
#include "loom/sim/systemc_sim.h"

#include <mutex>
#include <string>

#include "backend_config.h"
#include "loom/runtime/shared_object.h"
#include "loom/sim/rtl_sim.h"
#include "rtl/rtl_core.h"
#include "systemc/systemc_engine.h"

namespace loom::sim {

namespace {

#ifdef LOOM_HAVE_SYSTEMC
// The rtl backend's options, then the memory model behind the AXI4 port.
BackendOptionSchema systemc_option_schema() {
  using O = BackendOption;
  BackendOptionSchema s = rtl_option_schema();
  s.push_back(O::choice("memory", {"fixed", "banked"},
                        "the memory model behind the accelerator (fixed: every burst dram_latency cycles; banked: a "
                        "DRAM with open rows per bank)",
                        "fixed"));
  s.push_back(O::count("banks", 1, 1024, "banked memory: banks", "8"));
  s.push_back(O::count("row_bytes", 64, 1 << 20, "banked memory: bytes per row", "2048"));
  s.push_back(O::count("row_hit_latency", 1, 100000, "banked memory: cycles of a burst to an open row", "20"));
  s.push_back(O::count("row_miss_latency", 1, 100000, "banked memory: cycles of a burst that opens its row", "44"));
  return s;
}

struct SystemcOptions {
  sc::MemoryOptions memory;
  RtlSimOptions rtl;
};

// The one reader of the "systemc" section: the factory and the check (run before any job) both
// use it.
SystemcOptions systemc_options(const nlohmann::json& section) {
  BackendOptionValues v = read_backend_options("systemc", section.dump());
  SystemcOptions o;
  o.rtl = rtl_options_from("systemc", v);
  o.memory.model = v.text("memory", o.memory.model);
  o.memory.banks = uint32_t(v.count("banks", o.memory.banks));
  o.memory.row_bytes = uint32_t(v.count("row_bytes", o.memory.row_bytes));
  o.memory.row_hit_latency = uint32_t(v.count("row_hit_latency", o.memory.row_hit_latency));
  o.memory.row_miss_latency = uint32_t(v.count("row_miss_latency", o.memory.row_miss_latency));
  o.memory.latency = o.rtl.dram_latency;
  return o;
}
#endif

}  // namespace

bool systemc_available() {
#ifdef LOOM_HAVE_SYSTEMC
  return true;
#else
  return false;
#endif
}

#ifndef LOOM_HAVE_SYSTEMC
namespace {
[[noreturn]] void systemc_not_built() {
  LOOM_THROW(DeviceError,
             "the systemc backend is not built: Loom was configured without SystemC or without the RTL models "
             "(install libsystemc-dev and verilator, and configure again)");
}
}  // namespace
#endif

#ifdef LOOM_HAVE_SYSTEMC
namespace sc {

#ifdef LOOM_SYSTEMC_MODULE
namespace {
using MakeEngine = decltype(&loom_systemc_make_engine);

// The platform module beside this library (libloom_systemc.so), loaded once per process.
MakeEngine platform_module() {
  static MakeEngine make = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    make = reinterpret_cast<MakeEngine>(runtime::load_module_symbol(
        reinterpret_cast<const void*>(&register_systemc_sim), LOOM_SYSTEMC_MODULE, "loom_systemc_make_engine", error));
  });
  if (!make) LOOM_THROW(DeviceError, "the systemc backend's platform: ", error);
  return make;
}
}  // namespace
#endif

std::unique_ptr<rtl::CycleEngine> make_systemc_engine(rtl::RtlCore& core, const MemoryOptions& memory) {
#ifdef LOOM_SYSTEMC_MODULE
  return std::unique_ptr<rtl::CycleEngine>(platform_module()(&core, &memory));
#else
  return std::unique_ptr<rtl::CycleEngine>(loom_systemc_make_engine(&core, &memory));
#endif
}

}  // namespace sc
#endif

void register_systemc_sim() {
#ifdef LOOM_HAVE_SYSTEMC
  register_accel_backend_options("systemc", systemc_option_schema());
#endif
  register_accel_backend("systemc", [](const std::string& json) -> std::unique_ptr<AccelDevice> {
#ifndef LOOM_HAVE_SYSTEMC
    (void)json;
    systemc_not_built();
#else
    BackendConfig b = parse_backend_config(json, "systemc");
    SystemcOptions o = systemc_options(b.options);
    return std::make_unique<RtlSim>("systemc", b.config, o.rtl, uint64_t{256} << 20, [memory = o.memory](rtl::RtlCore& core) {
      return sc::make_systemc_engine(core, memory);
    });
#endif
  });
  register_accel_backend_check("systemc", [](const std::string& json) {
#ifndef LOOM_HAVE_SYSTEMC
    (void)json;
    systemc_not_built();
#else
    // The options as the factory reads them, then a model built for the config.
    BackendConfig b = parse_backend_config(json, "systemc");
    const RtlSimOptions o = systemc_options(b.options).rtl;
    if (o.coverage_path.empty())
      rtl::require_model(b.config, "systemc");
    else
      rtl::require_coverage_model(b.config, "systemc");
#endif
  });
}

}  // namespace loom::sim
