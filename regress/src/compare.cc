#include "loom/regress/compare.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace loom::regress {

namespace {
std::string shape_text(const std::vector<int64_t>& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t.empty() ? "scalar" : t;
}
}  // namespace

ArrayDiff compare_arrays(const NDArray& got, const NDArray& want) {
  ArrayDiff d;
  if (got.shape() != want.shape() || !(got.dtype() == want.dtype())) {
    d.mismatches = std::max<int64_t>(1, want.numel());
    d.first = 0;
    d.detail = "shape " + shape_text(got.shape()) + " " + got.describe() + " vs the reference's " +
               shape_text(want.shape()) + " " + want.describe();
    d.max_abs_error = INFINITY;
    return d;
  }
  const size_t bytes = got.dtype().bytes();
  const auto* g = static_cast<const unsigned char*>(got.raw_data());
  const auto* w = static_cast<const unsigned char*>(want.raw_data());
  for (int64_t i = 0; i < want.numel(); ++i) {
    double wv = want.get_as_double(i), gv = got.get_as_double(i);
    d.max_abs_reference = std::max(d.max_abs_reference, std::fabs(wv));
    if (std::memcmp(g + size_t(i) * bytes, w + size_t(i) * bytes, bytes) == 0) continue;
    // NaN where the reference has none (or the reverse) is an infinite error.
    double err = std::isnan(wv) != std::isnan(gv) ? INFINITY : std::fabs(wv - gv);
    d.max_abs_error = std::max(d.max_abs_error, err);
    if (d.mismatches++ == 0) {
      d.first = i;
      std::ostringstream os;
      os << "element " << i << ": " << gv << " vs " << wv;
      d.detail = os.str();
    }
  }
  return d;
}

int64_t argmax(const NDArray& a) {
  int64_t best = 0;
  for (int64_t i = 1; i < a.numel(); ++i)
    if (a.get_as_double(i) > a.get_as_double(best)) best = i;
  return best;
}

AccelTotals accel_totals(const runtime::GraphExecutor& ex) {
  AccelTotals t;
  for (size_t k = 0; k < ex.kernels().size(); ++k) {
    if (ex.kernels()[k].device != runtime::KernelDevice::Accel) continue;
    ++t.kernels;
    t.cycles += ex.accel_stats()[k].cycles;
    t.macs += double(ex.accel_stats()[k].gemm_macs);
  }
  return t;
}

}  // namespace loom::regress
