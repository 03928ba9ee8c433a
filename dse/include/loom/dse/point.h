// One point of an accelerator design-space sweep: what it runs (a config, a workload and the run
// parameters; its id is their content hash) and what it gave (cycles from the performance model,
// GEMM utilization, area from the analytical model), or why the config is illegal.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/accel/area_model.h"

namespace loom::dse {

// What a sweep may vary: config fields (scratchpads in KiB; "block" sets block_in and block_out)
// and the run's parameters.
const std::vector<std::string>& config_parameters();  // batch, block_in, block_out, inp_kib, ...
const std::vector<std::string>& run_parameters();     // dram_latency, dram_bytes_per_cycle, vthreads, queue_depth

// Everything that decides a point's result.
struct PointSpec {
  nlohmann::json config = nlohmann::json::object();   // the accelerator config's fields, without a name
  std::string workload;                               // resnet18-convs:LAYERS or model:NAME[@IMAGE]|FILE:int8
  nlohmann::json options = nlohmann::json::object();  // run parameters the sweep sets

  // {"config", "workload", "backend": "perf", "options"}: canonical, what the id hashes.
  nlohmann::json to_json() const;
  // Error naming `where` and what is missing, unknown or of the wrong type.
  static PointSpec from_json(const nlohmann::json& j, const std::string& where);
  std::string id() const;
};

struct LayerResult {
  std::string layer;
  uint64_t cycles = 0;
  double macs = 0, utilization = 0;
};

struct PointResult {
  bool legal = false;
  std::string reason;  // why an illegal point is illegal
  uint64_t cycles = 0;
  double macs = 0, utilization = 0;  // GEMM utilization: macs / (cycles x the core's products)
  accel::AreaEstimate area;
  double area_mean = 0;  // the mean of the four resources' shares of an xc7z020 (the area axis)
  double binding = 0;    // the largest share: above 1 the point does not fit the part
  std::vector<LayerResult> layers;

  // {"status": "ok"|"illegal", "cycles", "macs", "utilization", "area", "layers"} or {"status", "reason"}.
  nlohmann::json to_json() const;
  static PointResult from_json(const nlohmann::json& j);  // Error naming what is missing
};

// A workload, built once and run at many points (a model is quantized once).
class Workload {
 public:
  // Error naming the workload when it is malformed or names no layer or model.
  static Workload from(const std::string& text);
  // The same checks without building anything (no model is loaded or quantized).
  static void check(const std::string& text);
  ~Workload();
  Workload(Workload&&) noexcept;
  Workload& operator=(Workload&&) noexcept;

 private:
  Workload();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend PointResult run_point(const PointSpec& spec, const Workload& w);
};

// Compiles and times the workload for the point's config on the performance model. Never throws:
// an illegal config (or any failure of the point) is the result's reason.
PointResult run_point(const PointSpec& spec, const Workload& w);

// The area shares and utilization of a legal result, from its cycles, work and area.
void summarize(PointResult& r, const nlohmann::json& config);

}  // namespace loom::dse
