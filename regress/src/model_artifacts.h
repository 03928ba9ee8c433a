// The compiled forms of a model job (model:NAME or model:FILE.onnx), shared by the jobs of a run:
// the model is quantized once (its calibration kept), the float and CPU int8 references compiled
// once, and the accelerator build compiled once per config, whichever job gets there first; the
// others wait for it (a file lock) and load what it wrote. Kept in the run's work folder like the
// job results, keyed by the model's contents, the quantization and this Loom build.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "loom/regress/manifest.h"
#include "loom/runtime/model_file.h"

namespace loom::regress {

struct ModelArtifacts {
  runtime::ModelFile accel;                      // int8, its int8 layers on the accelerator of the job's config
  runtime::ModelFile cpu_int8;                   // the same int8 model on the CPU: the bit-exact reference
  runtime::ModelFile float_model;                // the float model: what accuracy is measured against
  nlohmann::json quantization;                   // graph::QuantizeReport::to_json of the quantization
  std::vector<std::string> input_distributions;  // per input, what it was calibrated on (InputDistribution::str)
  std::string note;                              // how they were obtained ("compiled", "shared: ..."), for the log
};

// `artifacts`: the folder they are shared in; empty: built in this process, not shared.
ModelArtifacts model_artifacts(const JobSpec& job, const Workload& w, const std::filesystem::path& artifacts);

}  // namespace loom::regress
