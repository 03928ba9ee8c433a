#include <algorithm>

#include "loom/accel/energy_model.h"
#include "loom/dse/sweep.h"
#include "loom/runtime/error.h"

namespace loom::dse {

Judging make_judging(const std::string& energy_table, int accuracy_inputs, bool model, const std::string& objectives,
                     const std::string& part, const std::string& fits, double min_accuracy, double max_energy_uj) {
  Judging j;
  j.objectives = parse_objectives(objectives);
  j.constraints.fits = !fits.empty();
  j.constraints.part = accel::fpga_part(fits.empty() ? part : fits).name;
  j.constraints.min_accuracy = min_accuracy;
  j.constraints.max_energy_uj = max_energy_uj;
  if (accuracy_inputs < -1 || accuracy_inputs > 10000)
    LOOM_THROW(Error, "--accuracy-inputs ", accuracy_inputs, ": a number of inputs in [0, 10000]");
  if (accuracy_inputs < 0) accuracy_inputs = model ? 16 : 0;
  if (!model && accuracy_inputs > 0)
    LOOM_THROW(Error, "--accuracy-inputs: accuracy is a model's (--model); ResNet-18's conv layers have none");
  const bool wants_accuracy =
      min_accuracy >= 0 || std::find(j.objectives.begin(), j.objectives.end(), "accuracy") != j.objectives.end();
  if (wants_accuracy && accuracy_inputs == 0)
    LOOM_THROW(Error, min_accuracy >= 0 ? "--min-accuracy" : "--objectives accuracy",
               " needs the accuracy of a model: --model, with --accuracy-inputs above 0");
  j.evaluation.energy_table = nlohmann::json::parse(accel::energy_table(energy_table).to_json());
  j.evaluation.accuracy_inputs = accuracy_inputs;
  return j;
}

void set_evaluation(std::vector<Point>& points, const Evaluation& e) {
  for (Point& p : points) {
    p.spec.evaluation = e;
    p.id = p.spec.id();
  }
}

void judge(std::vector<Point>& points, const Judging& j, bool front) {
  const accel::FpgaPart& part = accel::fpga_part(j.constraints.part);
  for (Point& p : points)
    if (p.result.legal) summarize(p.result, p.spec.config, part);
  if (front) return mark_pareto(points, j.objectives, j.constraints);  // marks `infeasible` too
  for (Point& p : points)
    if (p.result.legal) p.infeasible = violation(p.result, j.constraints);
}

}  // namespace loom::dse
