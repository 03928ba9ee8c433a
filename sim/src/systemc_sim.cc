// The "systemc" backend: RtlSim with its cycles passing in the SystemC TLM-2.0 platform
// (systemc/platform.cc). Its config JSON may carry a "systemc" object: the rtl backend's options
// (dram_latency, dram_bytes_per_cycle, dram_stall_rate, cycle_limit, fst...) and the memory model
// behind the AXI4 port ("memory": "fixed" | "banked", "banks", "row_bytes", "row_hit_latency",
// "row_miss_latency").
#include "loom/sim/systemc_sim.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "backend_config.h"
#include "loom/sim/rtl_sim.h"
#include "rtl/rtl_core.h"
#include "systemc/systemc_engine.h"

namespace loom::sim {

namespace {

sc::MemoryOptions take_memory_options(nlohmann::json& o) {
  sc::MemoryOptions m;
  auto take_u32 = [&](const char* key, uint32_t& field, uint32_t lo, uint32_t hi) {
    if (!o.contains(key)) return;
    const nlohmann::json v = o[key];
    o.erase(key);
    if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
      LOOM_THROW(ConfigError, "systemc backend: \"", key, "\" must be an integer in [", lo, ", ", hi, "], got ",
                 v.dump());
    field = v.get<uint32_t>();
  };
  if (o.contains("memory")) {
    const nlohmann::json v = o["memory"];
    o.erase("memory");
    if (!v.is_string() || (v != "fixed" && v != "banked"))
      LOOM_THROW(ConfigError, "systemc backend: \"memory\" must be \"fixed\" or \"banked\", got ", v.dump());
    m.model = v.get<std::string>();
  }
  take_u32("banks", m.banks, 1, 1024);
  take_u32("row_bytes", m.row_bytes, 64, 1u << 20);
  take_u32("row_hit_latency", m.row_hit_latency, 1, 100000);
  take_u32("row_miss_latency", m.row_miss_latency, 1, 100000);
  return m;
}

struct SystemcOptions {
  sc::MemoryOptions memory;
  RtlSimOptions rtl;
};

// The one reader of the "systemc" section: the factory and the check (run before any job) both
// use it. The memory model's keys, then the rest as the rtl backend's options.
SystemcOptions systemc_options(nlohmann::json options) {
  SystemcOptions o;
  o.memory = take_memory_options(options);
  o.rtl = RtlSimOptions::from_json(options.dump());
  o.memory.latency = o.rtl.dram_latency;
  return o;
}

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
    Dl_info self{};
    if (!dladdr(reinterpret_cast<void*>(&register_systemc_sim), &self) || !self.dli_fname) {
      error = "cannot find the folder of libloom_sim";
      return;
    }
    std::string path = (std::filesystem::path(self.dli_fname).parent_path() / LOOM_SYSTEMC_MODULE).string();
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      error = "cannot load " + path + " (" + (e ? e : "unknown error") + ")";
      return;
    }
    make = reinterpret_cast<MakeEngine>(dlsym(lib, "loom_systemc_make_engine"));
    if (!make) error = path + " lacks loom_systemc_make_engine";
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
    systemc_options(b.options);
    rtl::require_model(b.config, "systemc");
#endif
  });
}

}  // namespace loom::sim
