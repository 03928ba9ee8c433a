#include "execution_plan.h"

#include <unistd.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::runtime {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 40;  // no single buffer of a real model comes near

// An integer field read without undefined behaviour: nlohmann's get<T>() static_casts a float
// such as 1e101 (found by fuzz_executor_graph); here only JSON integers in T's range pass.
template <typename T>
T integer(const json& j, const char* what) {
  bool fits = j.is_number_unsigned() ? j.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
              : j.is_number_integer() ? j.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                            (j.get<int64_t>() < 0 || uint64_t(j.get<int64_t>()) <= uint64_t(std::numeric_limits<T>::max()))
                                      : false;
  if (!fits) LOOM_THROW(TypeError, what, " must be an integer in range, got ", j.dump());
  return j.is_number_unsigned() ? T(j.get<uint64_t>()) : T(j.get<int64_t>());
}
template <typename T>
T integer_or(const json& obj, const char* key, T fallback) {
  return obj.contains(key) ? integer<T>(obj.at(key), key) : fallback;
}

PlannedValue parse_value(const json& v, const ExecutionPlan& plan, uint64_t params_bytes, const std::string& origin) {
  PlannedValue val;
  val.spec.name = v.at("name").get<std::string>();
  for (auto& d : v.at("shape")) val.spec.shape.push_back(integer<int64_t>(d, "a shape dimension"));
  val.spec.dtype = DataType::parse(v.at("dtype").get<std::string>());
  uint64_t nbytes = val.spec.dtype.bytes();
  for (int64_t d : val.spec.shape) {
    if (d < 0 || (d > 0 && nbytes > kMaxBufferBytes / static_cast<uint64_t>(d)))
      LOOM_THROW(ModelError, origin, ": value '", val.spec.name, "' has an invalid shape ", shape_str(val.spec.shape));
    nbytes *= static_cast<uint64_t>(d);
  }
  val.nbytes = nbytes;
  val.accel_offset = integer_or<int64_t>(v, "accel_offset", -1);
  std::string kind = v.at("kind").get<std::string>();
  if (kind == "accel_param") {
    val.kind = PlannedValue::Kind::AccelParam;
    if (val.accel_offset < 0) LOOM_THROW(ModelError, origin, ": accelerator parameter '", val.spec.name, "' has no accel_offset");
  } else if (kind == "param") {
    val.kind = PlannedValue::Kind::Param;
    val.param_offset = integer<uint64_t>(v.at("offset"), "offset");
    if (val.param_offset % 64 != 0 || val.param_offset > params_bytes || nbytes > params_bytes - val.param_offset)
      LOOM_THROW(ModelError, origin, ": parameter '", val.spec.name, "' lies outside the parameter blob");
  } else if (kind == "input" || kind == "temp") {
    val.kind = kind == "input" ? PlannedValue::Kind::Input : PlannedValue::Kind::Temp;
    val.storage = integer<size_t>(v.at("storage"), "storage");
    if (val.storage >= plan.storage_bytes.size() || plan.storage_bytes[val.storage] < nbytes)
      LOOM_THROW(ModelError, origin, ": value '", val.spec.name, "' does not fit its storage ", val.storage);
  } else {
    LOOM_THROW(ModelError, origin, ": value '", val.spec.name, "' has unknown kind '", kind, "'");
  }
  return val;
}

}  // namespace

uint64_t ExecutionPlan::storage_total() const {
  uint64_t total = 0;
  for (uint64_t b : storage_bytes) total += b;  // each is below 2^40 and there are fewer than 2^24 of them
  return total;
}

uint64_t default_host_memory_limit() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : kMaxBufferBytes;
}

ExecutionPlan parse_execution_plan(const std::string& graph_json, uint64_t params_bytes, const std::string& origin) {
  json g;
  try {
    g = json::parse(graph_json);
  } catch (const json::exception& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  }
  ExecutionPlan plan;
  try {
    if (!g.is_object() || g.value("format", "") != kGraphFormat) LOOM_THROW(ModelError, origin, ": the executor graph is not a ", kGraphFormat);
    const int version = integer_or<int>(g, "version", 0);
    if (version != kGraphFormatVersion)
      LOOM_THROW(ModelError, origin, ": executor graph version ", version, ", this runtime reads ", kGraphFormatVersion);
    plan.target = g.value("target", "");
    plan.model = g.value("model", "");
    const json& storages = g.at("storages");
    // Fewer than 2^24 buffers of at most 2^40 bytes each: the total stays below 2^64.
    if (storages.size() >= (size_t(1) << 24)) LOOM_THROW(ModelError, origin, ": ", storages.size(), " storage buffers is implausibly many");
    for (auto& s : storages) {
      uint64_t bytes = integer<uint64_t>(s, "a storage size");
      if (bytes > kMaxBufferBytes) LOOM_THROW(ModelError, origin, ": storage of ", bytes, " bytes is implausibly large");
      plan.storage_bytes.push_back(bytes);
    }
    plan.planned_bytes = integer_or<uint64_t>(g, "planned_bytes", 0);
    plan.unplanned_bytes = integer_or<uint64_t>(g, "unplanned_bytes", 0);
    for (auto& v : g.at("values")) plan.values.push_back(parse_value(v, plan, params_bytes, origin));
    auto check_id = [&](int id, const char* what) {
      if (id < 0 || static_cast<size_t>(id) >= plan.values.size())
        LOOM_THROW(ModelError, origin, ": ", what, " refers to value ", id, " of ", plan.values.size());
      return id;
    };
    for (auto& i : g.at("inputs")) plan.inputs.push_back(check_id(integer<int>(i, "an input"), "an input"));
    for (auto& o : g.at("outputs")) plan.outputs.push_back(check_id(integer<int>(o, "an output"), "an output"));
    for (auto& k : g.at("kernels")) {
      KernelCall call;
      call.node = k.at("node").get<std::string>();
      call.func = k.at("func").get<std::string>();
      for (auto& a : k.at("args")) call.args.push_back(check_id(integer<int>(a, "a kernel argument"), "a kernel argument"));
      call.accel_stream = integer_or<int>(k, "accel_stream", -1);
      for (auto& a : k.value("upload", json::array())) call.upload.push_back(check_id(integer<int>(a, "an upload"), "an upload"));
      for (auto& a : k.value("download", json::array())) call.download.push_back(check_id(integer<int>(a, "a download"), "a download"));
      plan.kernels.push_back(std::move(call));
    }
  } catch (const json::exception& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  } catch (const TypeError& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  }
  return plan;
}

}  // namespace loom::runtime
