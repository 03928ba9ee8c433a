// XGBoost is loaded with dlopen on the first fit, not linked: a process that never tunes (every
// `loom` command but `tune`) starts without it and its dependencies.
#include "loom/tune/cost_model.h"

#include <mutex>
#include <string>

#include "loom/runtime/env.h"
#include "loom/runtime/error.h"
#include "loom/runtime/shared_object.h"

#ifdef LOOM_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace loom::tune {

#ifdef LOOM_HAVE_XGBOOST

namespace {

// The C API functions the cost model calls, resolved from the library.
struct XgbApi {
  decltype(&XGBGetLastError) get_last_error = nullptr;
  decltype(&XGDMatrixCreateFromMat) matrix_create = nullptr;
  decltype(&XGDMatrixSetFloatInfo) matrix_set_float_info = nullptr;
  decltype(&XGDMatrixFree) matrix_free = nullptr;
  decltype(&XGBoosterCreate) booster_create = nullptr;
  decltype(&XGBoosterSetParam) booster_set_param = nullptr;
  decltype(&XGBoosterUpdateOneIter) booster_update = nullptr;
  decltype(&XGBoosterPredict) booster_predict = nullptr;
  decltype(&XGBoosterFree) booster_free = nullptr;
  std::string error;  // empty: loaded
};

// Binds `fn` to `name`; false (and the error says which) when XGBoost lacks it.
template <typename Fn>
bool resolve(void* lib, Fn& fn, const char* name, std::string& error) {
  std::string missing;
  if (runtime::bind_symbol(lib, fn, {name}, missing)) return true;
  error = "XGBoost library lacks " + missing;
  return false;
}

// LOOM_XGBOOST_LIBRARY names the library; by default the one found when Loom was configured,
// then the soname on the loader's path.
const XgbApi& xgb() {
  static XgbApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> paths;
    if (auto p = runtime::env::text("LOOM_XGBOOST_LIBRARY"))
      paths.push_back(*p);
    else
      paths = {LOOM_XGBOOST_PATH, "libxgboost.so.0", "libxgboost.so"};
    std::string why;
    void* lib = runtime::open_shared_object(paths, why);
    if (!lib) {
      api.error = "cannot load XGBoost (" + why + "); install libxgboost0 or set LOOM_XGBOOST_LIBRARY";
      return;
    }
    std::string& e = api.error;
    resolve(lib, api.get_last_error, "XGBGetLastError", e) &&
        resolve(lib, api.matrix_create, "XGDMatrixCreateFromMat", e) &&
        resolve(lib, api.matrix_set_float_info, "XGDMatrixSetFloatInfo", e) &&
        resolve(lib, api.matrix_free, "XGDMatrixFree", e) && resolve(lib, api.booster_create, "XGBoosterCreate", e) &&
        resolve(lib, api.booster_set_param, "XGBoosterSetParam", e) &&
        resolve(lib, api.booster_update, "XGBoosterUpdateOneIter", e) &&
        resolve(lib, api.booster_predict, "XGBoosterPredict", e) && resolve(lib, api.booster_free, "XGBoosterFree", e);
  });
  return api;
}

const XgbApi& loaded() {
  const XgbApi& api = xgb();
  if (!api.error.empty()) LOOM_THROW(RuntimeError, "cost model: ", api.error);
  return api;
}

void check(int rc, const char* what) {
  if (rc != 0) LOOM_THROW(RuntimeError, "cost model: ", what, ": ", xgb().get_last_error());
}

// Frees a DMatrix however the scope is left.
struct Matrix {
  DMatrixHandle h = nullptr;
  ~Matrix() {
    if (h) xgb().matrix_free(h);
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
  check(loaded().matrix_create(flat.data(), x.size(), cols, -1e30f, &m), "XGDMatrixCreateFromMat");
  return m;
}

}  // namespace

struct CostModel::Impl {
  BoosterHandle booster = nullptr;
  ~Impl() {
    if (booster) xgb().booster_free(booster);
  }
};

CostModel::CostModel() : impl_(std::make_unique<Impl>()) {}
CostModel::~CostModel() = default;
bool CostModel::available() { return xgb().error.empty(); }

void CostModel::fit(const std::vector<std::vector<float>>& x, const std::vector<float>& y) {
  if (x.empty() || x.size() != y.size())
    LOOM_THROW(RuntimeError, "cost model: ", x.size(), " rows and ", y.size(), " targets");
  Matrix m{matrix(x)};
  DMatrixHandle d = m.h;
  const XgbApi& api = loaded();
  check(api.matrix_set_float_info(d, "label", y.data(), y.size()), "XGDMatrixSetFloatInfo");
  if (impl_->booster) api.booster_free(impl_->booster);
  impl_->booster = nullptr;
  check(api.booster_create(&d, 1, &impl_->booster), "XGBoosterCreate");
  // Small trees on few samples; one thread (the machine's cores time the candidates).
  for (auto [k, v] : {std::pair{"objective", "reg:squarederror"},
                      {"max_depth", "4"},
                      {"eta", "0.3"},
                      {"min_child_weight", "1"},
                      {"nthread", "1"},
                      {"verbosity", "0"}})
    check(api.booster_set_param(impl_->booster, k, v), "XGBoosterSetParam");
  for (int it = 0; it < 40; ++it) check(api.booster_update(impl_->booster, it, d), "XGBoosterUpdateOneIter");
}

std::vector<float> CostModel::predict(const std::vector<std::vector<float>>& x) const {
  if (!impl_->booster) LOOM_THROW(RuntimeError, "cost model: predict before fit");
  if (x.empty()) return {};
  Matrix m{matrix(x)};
  bst_ulong n = 0;
  const float* out = nullptr;
  check(loaded().booster_predict(impl_->booster, m.h, 0, 0, 0, &n, &out), "XGBoosterPredict");
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
