#include "execution_plan.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "loom/runtime/error.h"

namespace loom::runtime {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 40;  // no single buffer of a real model comes near

PlannedValue parse_value(const json& v, const ExecutionPlan& plan, uint64_t params_bytes, const std::string& origin) {
  PlannedValue val;
  val.spec.name = v.at("name").get<std::string>();
  val.spec.shape = v.at("shape").get<std::vector<int64_t>>();
  val.spec.dtype = DataType::parse(v.at("dtype").get<std::string>());
  uint64_t nbytes = val.spec.dtype.bytes();
  for (int64_t d : val.spec.shape) {
    if (d < 0 || (d > 0 && nbytes > kMaxBufferBytes / static_cast<uint64_t>(d)))
      LOOM_THROW(ModelError, origin, ": value '", val.spec.name, "' has an invalid shape ", shape_str(val.spec.shape));
    nbytes *= static_cast<uint64_t>(d);
  }
  val.nbytes = nbytes;
  val.accel_offset = v.value("accel_offset", int64_t(-1));
  std::string kind = v.at("kind").get<std::string>();
  if (kind == "accel_param") {
    val.kind = PlannedValue::Kind::AccelParam;
    if (val.accel_offset < 0) LOOM_THROW(ModelError, origin, ": accelerator parameter '", val.spec.name, "' has no accel_offset");
  } else if (kind == "param") {
    val.kind = PlannedValue::Kind::Param;
    val.param_offset = v.at("offset").get<uint64_t>();
    if (val.param_offset % 64 != 0 || val.param_offset > params_bytes || nbytes > params_bytes - val.param_offset)
      LOOM_THROW(ModelError, origin, ": parameter '", val.spec.name, "' lies outside the parameter blob");
  } else if (kind == "input" || kind == "temp") {
    val.kind = kind == "input" ? PlannedValue::Kind::Input : PlannedValue::Kind::Temp;
    val.storage = v.at("storage").get<size_t>();
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
    if (g.value("version", 0) != kGraphFormatVersion)
      LOOM_THROW(ModelError, origin, ": executor graph version ", g.value("version", 0), ", this runtime reads ", kGraphFormatVersion);
    plan.target = g.value("target", "");
    plan.model = g.value("model", "");
    const json& storages = g.at("storages");
    if (storages.size() > (size_t(1) << 24)) LOOM_THROW(ModelError, origin, ": ", storages.size(), " storage buffers is implausibly many");
    for (auto& s : storages) {
      uint64_t bytes = s.get<uint64_t>();
      if (bytes > kMaxBufferBytes) LOOM_THROW(ModelError, origin, ": storage of ", bytes, " bytes is implausibly large");
      plan.storage_bytes.push_back(bytes);
    }
    plan.planned_bytes = g.value("planned_bytes", uint64_t(0));
    plan.unplanned_bytes = g.value("unplanned_bytes", uint64_t(0));
    for (auto& v : g.at("values")) plan.values.push_back(parse_value(v, plan, params_bytes, origin));
    auto check_id = [&](int id, const char* what) {
      if (id < 0 || static_cast<size_t>(id) >= plan.values.size())
        LOOM_THROW(ModelError, origin, ": ", what, " refers to value ", id, " of ", plan.values.size());
      return id;
    };
    for (auto& i : g.at("inputs")) plan.inputs.push_back(check_id(i.get<int>(), "an input"));
    for (auto& o : g.at("outputs")) plan.outputs.push_back(check_id(o.get<int>(), "an output"));
    for (auto& k : g.at("kernels")) {
      KernelCall call;
      call.node = k.at("node").get<std::string>();
      call.func = k.at("func").get<std::string>();
      for (auto& a : k.at("args")) call.args.push_back(check_id(a.get<int>(), "a kernel argument"));
      call.accel_stream = k.value("accel_stream", -1);
      for (auto& a : k.value("upload", json::array())) call.upload.push_back(check_id(a.get<int>(), "an upload"));
      for (auto& a : k.value("download", json::array())) call.download.push_back(check_id(a.get<int>(), "a download"));
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
