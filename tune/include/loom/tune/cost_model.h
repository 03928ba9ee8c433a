// The tuner's learned cost model. Gradient-boosted regression trees (XGBoost's C
// API) from a configuration's features to its log throughput; refitted after every round.
#pragma once
#include <memory>
#include <vector>

namespace loom::tune {

class CostModel {
 public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;
  // Fits rows x -> y (all rows the same length); replaces the previous fit.
  void fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y);
  std::vector<float> predict(const std::vector<std::vector<float>>& x) const;
  static bool available();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::tune
