#include "loom/tune/cost_model.h"

#include "loom/runtime/error.h"

#ifdef LOOM_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace loom::tune {

#ifdef LOOM_HAVE_XGBOOST

namespace {

void check(int rc, const char* what) {
  if (rc != 0) LOOM_THROW(RuntimeError, "cost model: ", what, ": ", XGBGetLastError());
}

// Frees a DMatrix however the scope is left.
struct Matrix {
  DMatrixHandle h = nullptr;
  ~Matrix() {
    if (h) XGDMatrixFree(h);
  }
};

// Row-major copy of the rows, and a DMatrix over it.
DMatrixHandle matrix(const std::vector<std::vector<float>>& x) {
  size_t cols = x.empty() ? 0 : x[0].size();
  std::vector<float> flat;
  flat.reserve(x.size() * cols);
  for (auto& row : x) {
    if (row.size() != cols) LOOM_THROW(RuntimeError, "cost model: rows of ", row.size(), " and ", cols, " features");
    flat.insert(flat.end(), row.begin(), row.end());
  }
  DMatrixHandle m = nullptr;
  check(XGDMatrixCreateFromMat(flat.data(), x.size(), cols, -1e30f, &m), "XGDMatrixCreateFromMat");
  return m;
}

}  // namespace

struct CostModel::Impl {
  BoosterHandle booster = nullptr;
  ~Impl() {
    if (booster) XGBoosterFree(booster);
  }
};

CostModel::CostModel() : impl_(std::make_unique<Impl>()) {}
CostModel::~CostModel() = default;
bool CostModel::available() { return true; }

void CostModel::fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y) {
  if (x.empty() || x.size() != y.size())
    LOOM_THROW(RuntimeError, "cost model: ", x.size(), " rows and ", y.size(), " targets");
  Matrix m{matrix(x)};
  DMatrixHandle d = m.h;
  check(XGDMatrixSetFloatInfo(d, "label", y.data(), y.size()), "XGDMatrixSetFloatInfo");
  if (impl_->booster) XGBoosterFree(impl_->booster);
  impl_->booster = nullptr;
  check(XGBoosterCreate(&d, 1, &impl_->booster), "XGBoosterCreate");
  // Small trees on few samples; one thread (the machine's cores time the candidates).
  for (auto [k, v] : {std::pair{"objective", "reg:squarederror"},
                      {"max_depth", "4"},
                      {"eta", "0.3"},
                      {"min_child_weight", "1"},
                      {"nthread", "1"},
                      {"verbosity", "0"}})
    check(XGBoosterSetParam(impl_->booster, k, v), "XGBoosterSetParam");
  for (int it = 0; it < 40; ++it) check(XGBoosterUpdateOneIter(impl_->booster, it, d), "XGBoosterUpdateOneIter");
}

std::vector<float> CostModel::predict(const std::vector<std::vector<float>>& x) const {
  if (!impl_->booster) LOOM_THROW(RuntimeError, "cost model: predict before fit");
  if (x.empty()) return {};
  Matrix m{matrix(x)};
  bst_ulong n = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(impl_->booster, m.h, 0, 0, 0, &n, &out), "XGBoosterPredict");
  return std::vector<float>(out, out + n);
}

#else  // built without XGBoost: the tuner falls back to random search

struct CostModel::Impl {};
CostModel::CostModel() = default;
CostModel::~CostModel() = default;
bool CostModel::available() { return false; }
void CostModel::fit(const std::vector<std::vector<float>>&, const std::vector<float>&) {
  LOOM_THROW(RuntimeError, "cost model: Loom was built without XGBoost (libxgboost-dev)");
}
std::vector<float> CostModel::predict(const std::vector<std::vector<float>>&) const {
  LOOM_THROW(RuntimeError, "cost model: Loom was built without XGBoost (libxgboost-dev)");
}

#endif

}  // namespace loom::tune
