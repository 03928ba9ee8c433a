// One point of an accelerator design-space sweep: what it runs (a config, a workload and the run
// parameters; its id is their content hash) and what it gave (cycles from the performance model,
// GEMM utilization, area from the analytical model, energy per inference from the performance
// model's action counts and an energy table, and for a model the accuracy of its quantized model
// at the config's precision against the float model, measured on the CPU), or why the config is
// illegal.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/accel/area_model.h"
#include "loom/accel/fpga_fit.h"

namespace loom::dse {

// What a sweep may vary: config fields (scratchpads in KiB; "block" sets block_in and block_out;
// "precision" the operand widths, precision.h) and the run's parameters.
const std::vector<std::string>& config_parameters();  // batch, block_in, block_out, inp_kib, ...
const std::vector<std::string>& run_parameters();     // dram_latency, dram_bytes_per_cycle, vthreads, queue_depth

// How a point is judged beyond cycles and area: the energy table (its JSON; accel/energy_model.h)
// and, for a model workload, how many random inputs calibrate its quantized model and how many
// other ones measure its accuracy (0: no accuracy).
struct Evaluation {
  nlohmann::json energy_table;  // empty: no energy
  int accuracy_inputs = 0;
  nlohmann::json to_json() const;
  static Evaluation from_json(const nlohmann::json& j, const std::string& where);  // Error naming `where`
  bool operator==(const Evaluation& o) const { return to_json() == o.to_json(); }
};

// Everything that decides a point's result.
struct PointSpec {
  nlohmann::json config = nlohmann::json::object();   // the accelerator config's fields, without a name
  std::string workload;                               // resnet18-convs:LAYERS or model:NAME[@IMAGE]|FILE:int8
  nlohmann::json options = nlohmann::json::object();  // run parameters the sweep sets
  Evaluation evaluation;

  // {"config", "workload", "backend": "perf", "options"[, "evaluation"]}: canonical, what the id
  // hashes.
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
  double area_mean = 0;  // the mean of the four resources' shares of the part (the area axis)
  double binding = 0;    // the largest share: above 1 the point does not fit the part
  std::vector<LayerResult> layers;
  std::string precision;  // "W8A8" ("W8A8-acc16"): the config's weight, input (and accumulator) widths
  // With an energy table: energy per inference (pJ) and its parts by category; ASIC area (mm², by
  // the table's area model, else asic-45nm's).
  double energy_pj = 0, asic_mm2 = 0;
  std::map<std::string, double> energy;
  // With accuracy inputs: the quantized model's agreement with the float one on the held-out inputs
  // (cosine of the outputs; top-1 agreement of a classifier, else -1); -1 without.
  double accuracy = -1, top1 = -1;
  // A model's int8-class layers its config keeps on the CPU ("node: why"): their work is in
  // neither the cycles nor the energy, so such a point is not comparable (a constraint, sweep.h).
  std::vector<std::string> kept_on_cpu;

  // {"status": "ok"|"illegal", "cycles", "macs", "utilization", "area", "layers", "precision",
  // ["energy_pj", "energy", "asic_mm2"], ["accuracy", "top1"], ["kept_on_cpu"]} or {"status", "reason"}.
  nlohmann::json to_json() const;
  static PointResult from_json(const nlohmann::json& j);  // Error naming what is missing
};

// A workload, built once and run at many points (a model is quantized once).
class Workload {
 public:
  // Error naming the workload when it is malformed or names no layer or model. A model is
  // quantized per distinct config precision, calibrated on `accuracy_inputs` random inputs (at
  // least one) and measured on as many others (none when 0).
  static Workload from(const std::string& text, int accuracy_inputs = 0);
  // The same checks without building anything (no model is loaded or quantized).
  static void check(const std::string& text);
  ~Workload();
  Workload(Workload&&) noexcept;
  Workload& operator=(Workload&&) noexcept;

 private:
  Workload();

 public:
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  friend PointResult run_point(const PointSpec& spec, const Workload& w);
};

// Compiles and times the workload for the point's config on the performance model. Never throws:
// an illegal config (or any failure of the point) is the result's reason.
PointResult run_point(const PointSpec& spec, const Workload& w);

// The area shares (of `part`) and utilization of a legal result, from its cycles, work and area.
void summarize(PointResult& r, const nlohmann::json& config, const accel::FpgaPart& part = accel::fpga_part("xc7z020"));

}  // namespace loom::dse
