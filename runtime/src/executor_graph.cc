#include "loom/runtime/executor_graph.h"

#include "dim_json.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "format_version.h"
#include "loom/runtime/error.h"
#include "loom/runtime/ndarray.h"

namespace loom::runtime {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 40;  // no single buffer of a real model comes near
constexpr ValueKind kValueKinds[] = {ValueKind::Input, ValueKind::Temp, ValueKind::Param, ValueKind::AccelParam};
constexpr KernelDevice kDevices[] = {KernelDevice::CPU, KernelDevice::Accel, KernelDevice::Cuda};

// An integer field read without undefined behaviour: nlohmann's get<T>() static_casts a float
// such as 1e101 (found by fuzz_executor_graph); here only JSON integers in T's range pass.
template <typename T>
T integer(const json& j, const char* what) {
  bool fits = j.is_number_unsigned() ? j.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
              : j.is_number_integer()
                  ? j.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                        (j.get<int64_t>() < 0 || uint64_t(j.get<int64_t>()) <= uint64_t(std::numeric_limits<T>::max()))
                  : false;
  if (!fits) LOOM_THROW(TypeError, what, " must be an integer in range, got ", j.dump());
  return j.is_number_unsigned() ? T(j.get<uint64_t>()) : T(j.get<int64_t>());
}
template <typename T>
T integer_or(const json& obj, const char* key, T fallback) {
  return obj.contains(key) ? integer<T>(obj.at(key), key) : fallback;
}

// The enumerator whose name is `name`, or a ModelError listing the accepted names.
template <typename Enum, size_t N>
Enum enum_named(const Enum (&all)[N], const char* (*name_of)(Enum), const char* noun, const std::string& name,
                const std::string& origin, const std::string& what) {
  std::string accepted;
  for (Enum e : all) {
    if (name == name_of(e)) return e;
    accepted += std::string(accepted.empty() ? "" : ", ") + name_of(e);
  }
  LOOM_THROW(ModelError, origin, ": ", what, " has unknown ", noun, " '", name, "' (expected one of ", accepted, ")");
}

// A value id that refers to one of the `count` values.
int value_id(const json& j, const char* what, size_t count, const std::string& origin) {
  int id = integer<int>(j, what);
  if (id < 0 || static_cast<size_t>(id) >= count)
    LOOM_THROW(ModelError, origin, ": ", what, " refers to value ", id, " of ", count);
  return id;
}

ExecutorValue value_from_json(const json& v, const ExecutorGraph& g, uint64_t params_bytes, const std::string& origin) {
  ExecutorValue val;
  val.name = v.at("name").get<std::string>();
  for (auto& d : v.at("shape")) val.shape.push_back(integer<int64_t>(d, "a shape dimension"));
  val.dtype = DataType::parse(v.at("dtype").get<std::string>());
  if (v.contains("dims")) {
    try {
      val.dims = dims_from_json(v.at("dims"));
    } catch (const std::invalid_argument& e) {
      LOOM_THROW(ModelError, origin, ": value '", val.name, "': ", e.what());
    }
    if (val.dims.size() != val.shape.size())
      LOOM_THROW(ModelError, origin, ": value '", val.name, "' has ", val.dims.size(), " dims for a shape of ",
                 val.shape.size());
    // Every run's shape fits the storage reserved for the largest.
    for (size_t d = 0; d < val.dims.size(); ++d) {
      std::pair<int64_t, int64_t> range;
      try {
        range = dim_range(val.dims[d], g.shape_vars);
      } catch (const RuntimeError& e) {
        LOOM_THROW(ModelError, origin, ": value '", val.name, "': ", e.what());
      }
      if (range.first < 0 || range.second != val.shape[d])
        LOOM_THROW(ModelError, origin, ": value '", val.name, "': dimension ", d, " (", val.dims[d].str(),
                   ") ranges over [", range.first, ", ", range.second, "], not up to its shape's ", val.shape[d]);
    }
  }
  uint64_t nbytes = val.dtype.bytes();
  for (int64_t d : val.shape) {
    if (d < 0 || (d > 0 && nbytes > kMaxBufferBytes / static_cast<uint64_t>(d)))
      LOOM_THROW(ModelError, origin, ": value '", val.name, "' has an invalid shape ", shape_str(val.shape));
    nbytes *= static_cast<uint64_t>(d);
  }
  val.accel_offset = integer_or<int64_t>(v, "accel_offset", -1);
  val.accel_bits = integer_or<int>(v, "accel_bits", 0);
  if (val.accel_bits != 0 &&
      (val.accel_offset < 0 || val.accel_bits >= val.dtype.bits() ||
       (val.accel_bits != 2 && val.accel_bits != 4 && val.accel_bits != 8 && val.accel_bits != 16)))
    LOOM_THROW(ModelError, origin, ": value '", val.name, "': accel_bits ", val.accel_bits,
               " (expected 2, 4, 8 or 16, narrower than ", val.dtype.str(), ", for a value in the accelerator image)");
  if (v.contains("finite_only")) {
    if (!v["finite_only"].is_boolean())
      LOOM_THROW(ModelError, origin, ": value '", val.name, "': finite_only must be true or false");
    val.finite_only = v["finite_only"].get<bool>();
  }
  if (v.contains("in_place_region")) {
    if (!v["in_place_region"].is_boolean())
      LOOM_THROW(ModelError, origin, ": value '", val.name, "': in_place_region must be true or false");
    val.in_place_region = v["in_place_region"].get<bool>();
  }
  val.kind = enum_named(kValueKinds, value_kind_name, "kind", v.at("kind").get<std::string>(), origin,
                        "value '" + val.name + "'");
  if (val.in_place_region && val.kind != ValueKind::Temp)
    LOOM_THROW(ModelError, origin, ": ", value_kind_name(val.kind), " '", val.name,
               "' is marked in_place_region: only temporaries are");
  switch (val.kind) {
    case ValueKind::AccelParam:
      if (val.accel_offset < 0)
        LOOM_THROW(ModelError, origin, ": accelerator parameter '", val.name, "' has no accel_offset");
      break;
    case ValueKind::Param:
      val.param_offset = integer<uint64_t>(v.at("offset"), "offset");
      if (val.param_offset % kValueAlignment != 0 || val.param_offset > params_bytes ||
          nbytes > params_bytes - val.param_offset)
        LOOM_THROW(ModelError, origin, ": parameter '", val.name, "' lies outside the parameter blob");
      break;
    case ValueKind::Input:
    case ValueKind::Temp:
      val.storage = integer<uint64_t>(v.at("storage"), "storage");
      val.storage_offset = integer_or<uint64_t>(v, "storage_offset", 0);
      if (val.storage_offset % kValueAlignment != 0)
        LOOM_THROW(ModelError, origin, ": value '", val.name, "' lies at storage offset ", val.storage_offset,
                   ", not a multiple of ", kValueAlignment);
      if (val.storage >= g.storages.size() || g.storages[val.storage] < nbytes ||
          g.storages[val.storage] - nbytes < val.storage_offset)
        LOOM_THROW(ModelError, origin, ": value '", val.name, "' does not fit its storage ", val.storage,
                   val.storage_offset ? " at offset " + std::to_string(val.storage_offset) : std::string());
      break;
  }
  return val;
}

json value_to_json(const ExecutorValue& v) {
  json j = {{"name", v.name}, {"shape", v.shape}, {"dtype", v.dtype.str()}, {"kind", value_kind_name(v.kind)}};
  if (!v.dims.empty()) j["dims"] = dims_to_json(v.dims);
  if (v.kind == ValueKind::Param) j["offset"] = v.param_offset;
  if (v.kind == ValueKind::Input || v.kind == ValueKind::Temp) j["storage"] = v.storage;
  if (v.storage_offset) j["storage_offset"] = v.storage_offset;
  if (v.accel_offset >= 0) j["accel_offset"] = v.accel_offset;
  if (v.accel_bits) j["accel_bits"] = v.accel_bits;
  if (v.finite_only) j["finite_only"] = true;
  if (v.in_place_region) j["in_place_region"] = true;
  return j;
}

KernelCall kernel_from_json(const json& k, int version, const ExecutorGraph& g, const std::string& origin) {
  auto value_id = [&](const json& id, const char* what) {
    return runtime::value_id(id, what, g.values.size(), origin);
  };
  KernelCall call;
  call.node = k.at("node").get<std::string>();
  call.func = k.at("func").get<std::string>();
  for (auto& a : k.at("args")) call.args.push_back(value_id(a, "a kernel argument"));
  if (call.args.empty())
    LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node,
               "') has no arguments (its output is the last)");
  call.accel_stream = integer_or<int>(k, "accel_stream", -1);
  for (auto& a : k.value("upload", json::array())) call.upload.push_back(value_id(a, "an upload"));
  for (auto& a : k.value("download", json::array())) call.download.push_back(value_id(a, "a download"));
  if (version == 1)
    call.device = call.accel_stream >= 0 ? KernelDevice::Accel : KernelDevice::CPU;
  else
    call.device = enum_named(kDevices, device_name, "device", k.at("device").get<std::string>(), origin,
                             "kernel '" + call.func + "'");
  if (call.device == KernelDevice::Accel && call.accel_stream < 0)
    LOOM_THROW(ModelError, origin, ": accelerator kernel '", call.func, "' (node '", call.node,
               "') names no accel_stream");
  if (call.device != KernelDevice::Accel && call.accel_stream >= 0)
    LOOM_THROW(ModelError, origin, ": ", device_name(call.device), " kernel '", call.func, "' (node '", call.node,
               "') names an accel_stream");
  if (call.device == KernelDevice::CPU && (!call.upload.empty() || !call.download.empty()))
    LOOM_THROW(ModelError, origin, ": CPU kernel '", call.func, "' (node '", call.node,
               "') copies values (upload, download): the CPU reads the host's copies");
  for (int id : call.download) {
    const ValueKind kind = g.values[size_t(id)].kind;
    if (kind != ValueKind::Input && kind != ValueKind::Temp)
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node, "') downloads ",
                 value_kind_name(kind), " '", g.values[size_t(id)].name, "': only inputs and temporaries are written");
  }
  for (auto& v : k.value("variants", json::array())) {
    KernelVariant var{v.at("func").get<std::string>(), v.at("var").get<std::string>(),
                      integer<int64_t>(v.at("value"), "a kernel variant's value"), integer_or<int64_t>(v, "from", 0)};
    auto it =
        std::find_if(g.shape_vars.begin(), g.shape_vars.end(), [&](const ShapeVar& s) { return s.name == var.var; });
    if (call.device != KernelDevice::CPU || it == g.shape_vars.end() || var.value < it->min || var.value > it->max ||
        var.from < 0 || var.from > var.value)
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node, "') has a variant for ", var.var,
                 " = ", var.from ? std::to_string(var.from) + ".." : "", var.value,
                 ", which is not a CPU kernel's variant at a value of one of the model's shape variables");
    call.variants.push_back(std::move(var));
  }
  if (k.contains("ops")) {
    const json& ops = k.at("ops");
    if (!ops.is_number() || !(ops.get<double>() >= 0) || !std::isfinite(ops.get<double>()))
      LOOM_THROW(ModelError, origin, ": kernel '", call.func, "' (node '", call.node, "') has ops ", ops.dump(),
                 ", not a count of operations");
    call.ops = ops.get<double>();
  }
  if (call.device == KernelDevice::Cuda && version < 4 && (!call.upload.empty() || !call.download.empty()))
    LOOM_THROW(ModelError, origin, ": CUDA kernel '", call.func, "' (node '", call.node,
               "') copies values (upload, download), which executor graphs before version 4 do not");
  return call;
}

// Before version 4 a model's kernels were all CUDA or none, and the executor copied every input to
// the GPU before a run and every output back after it: the same copies, as the kernels' lists.
void add_whole_model_copies(ExecutorGraph& g, const std::string& origin) {
  const auto cuda = [](const KernelCall& k) { return k.device == KernelDevice::Cuda; };
  if (std::none_of(g.kernels.begin(), g.kernels.end(), cuda)) return;
  if (!std::all_of(g.kernels.begin(), g.kernels.end(), cuda))
    LOOM_THROW(ModelError, origin,
               ": executor graphs before version 4 run CUDA kernels alone; this one mixes them with ", "other devices");
  std::set<int> inputs(g.inputs.begin(), g.inputs.end()), uploaded;
  for (KernelCall& call : g.kernels) {
    for (size_t a = 0; a + 1 < call.args.size(); ++a)
      if (inputs.count(call.args[a]) && uploaded.insert(call.args[a]).second) call.upload.push_back(call.args[a]);
  }
  // Each output after the last kernel that writes it; one no kernel writes (an in-place concat's)
  // after the last kernel.
  for (int o : g.outputs) {
    auto k =
        std::find_if(g.kernels.rbegin(), g.kernels.rend(), [&](const KernelCall& c) { return c.args.back() == o; });
    std::vector<int>& download = (k == g.kernels.rend() ? g.kernels.back() : *k).download;
    if (std::find(download.begin(), download.end(), o) == download.end()) download.push_back(o);
  }
}

json kernel_to_json(const KernelCall& k) {
  json j = {{"node", k.node}, {"func", k.func}, {"device", device_name(k.device)}, {"args", k.args}};
  if (k.device == KernelDevice::Accel) j["accel_stream"] = k.accel_stream;
  if (k.ops > 0) j["ops"] = k.ops;
  if (k.device != KernelDevice::CPU) {
    j["upload"] = k.upload;
    j["download"] = k.download;
  }
  for (const KernelVariant& v : k.variants)
    j["variants"].push_back(v.from ? json{{"func", v.func}, {"var", v.var}, {"value", v.value}, {"from", v.from}}
                                   : json{{"func", v.func}, {"var", v.var}, {"value", v.value}});
  return j;
}

}  // namespace

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Input:
      return "input";
    case ValueKind::Temp:
      return "temp";
    case ValueKind::Param:
      return "param";
    case ValueKind::AccelParam:
      return "accel_param";
  }
  return "?";
}

const char* device_name(KernelDevice device) {
  switch (device) {
    case KernelDevice::CPU:
      return "cpu";
    case KernelDevice::Accel:
      return "accel";
    case KernelDevice::Cuda:
      return "cuda";
  }
  return "?";
}

uint64_t ExecutorValue::nbytes() const {
  uint64_t n = dtype.bytes();
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t ExecutorValue::accel_nbytes() const {
  if (!accel_bits) return nbytes();
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return (n * static_cast<uint64_t>(accel_bits) + 7) / 8;
}

uint64_t ExecutorGraph::storage_total() const {
  uint64_t total = 0;
  for (uint64_t b : storages) total += b;  // from_json: each is below 2^40 and there are fewer than 2^24 of them
  return total;
}

std::string ExecutorGraph::to_json() const {
  json values_json = json::array(), kernels_json = json::array();
  for (auto& v : values) values_json.push_back(value_to_json(v));
  bool gpu = false;
  for (auto& k : kernels) {
    kernels_json.push_back(kernel_to_json(k));
    gpu |= k.device == KernelDevice::Cuda;
  }
  // A graph without CUDA kernels or shape variables is what version 3 describes: written so,
  // older runtimes read it.
  json vars = json::array();
  for (const ShapeVar& v : shape_vars) vars.push_back({{"name", v.name}, {"min", v.min}, {"max", v.max}});
  json j{{"format", kGraphFormat},
         {"version", !shape_vars.empty() ? 5
                     : gpu               ? 4
                                         : 3},
         {"model", model},
         {"target", target},
         {"storages", storages},
         {"planned_bytes", planned_bytes},
         {"unplanned_bytes", unplanned_bytes},
         {"values", values_json},
         {"inputs", inputs},
         {"outputs", outputs},
         {"kernels", kernels_json}};
  if (!shape_vars.empty()) j["shape_vars"] = vars;
  if (!target_triple.empty()) j["target_triple"] = target_triple;
  if (!target_features.empty()) j["target_features"] = target_features;
  return j.dump();
}

ExecutorGraph ExecutorGraph::from_json(std::string_view text, uint64_t params_bytes, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  }
  ExecutorGraph g;
  try {
    if (!j.is_object() || j.value("format", "") != kGraphFormat)
      LOOM_THROW(ModelError, origin, ": the executor graph is not a ", kGraphFormat);
    const int version = integer_or<int>(j, "version", 0);
    check_format_version(origin, "executor graph", version, kGraphFormatVersion);
    g.target = j.value("target", "");
    g.target_triple = j.value("target_triple", "");
    g.target_features = j.value("target_features", std::vector<std::string>{});
    g.model = j.value("model", "");
    const json& storages = j.at("storages");
    // Fewer than 2^24 buffers of at most 2^40 bytes each: the total stays below 2^64.
    if (storages.size() >= (size_t(1) << 24))
      LOOM_THROW(ModelError, origin, ": ", storages.size(), " storage buffers is implausibly many");
    for (auto& s : storages) {
      uint64_t bytes = integer<uint64_t>(s, "a storage size");
      if (bytes > kMaxBufferBytes)
        LOOM_THROW(ModelError, origin, ": storage of ", bytes, " bytes is implausibly large");
      g.storages.push_back(bytes);
    }
    if (j.contains("shape_vars"))
      for (auto& v : j.at("shape_vars")) {
        ShapeVar var{v.at("name").get<std::string>(), integer<int64_t>(v.at("min"), "a shape variable's min"),
                     integer<int64_t>(v.at("max"), "a shape variable's max")};
        if (var.name.empty() || var.min < 0 || var.max < var.min)
          LOOM_THROW(ModelError, origin, ": shape variable '", var.name, "' has the range [", var.min, ", ", var.max,
                     "] (a name, 0 <= min <= max)");
        for (const ShapeVar& o : g.shape_vars)
          if (o.name == var.name) LOOM_THROW(ModelError, origin, ": two shape variables are named '", var.name, "'");
        g.shape_vars.push_back(std::move(var));
      }
    g.planned_bytes = integer_or<uint64_t>(j, "planned_bytes", 0);
    g.unplanned_bytes = integer_or<uint64_t>(j, "unplanned_bytes", 0);
    for (auto& v : j.at("values")) g.values.push_back(value_from_json(v, g, params_bytes, origin));
    auto value_id = [&](const json& id, const char* what) {
      return runtime::value_id(id, what, g.values.size(), origin);
    };
    for (auto& i : j.at("inputs")) g.inputs.push_back(value_id(i, "an input"));
    for (auto& o : j.at("outputs")) g.outputs.push_back(value_id(o, "an output"));
    for (auto& k : j.at("kernels")) g.kernels.push_back(kernel_from_json(k, version, g, origin));
    if (version < 4) add_whole_model_copies(g, origin);
  } catch (const json::exception& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  } catch (const TypeError& e) {
    LOOM_THROW(ModelError, origin, ": malformed executor graph: ", e.what());
  }
  return g;
}

}  // namespace loom::runtime
