#include "loom/runtime/dim_expr.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "dim_json.h"
#include "loom/runtime/error.h"

namespace loom::runtime {

const std::string* DimExpr::as_variable() const {
  return offset == 0 && terms.size() == 1 && terms[0].coeff == 1 ? &terms[0].var : nullptr;
}

int64_t DimExpr::eval(const std::map<std::string, int64_t>& values) const {
  int64_t v = offset;
  for (const DimTerm& t : terms) {
    auto it = values.find(t.var);
    if (it == values.end()) LOOM_THROW(RuntimeError, "shape variable '", t.var, "' has no value");
    v += t.coeff * it->second;
  }
  return v;
}

std::string DimExpr::str() const {
  std::string s;
  for (const DimTerm& t : terms) {
    if (!s.empty())
      s += t.coeff < 0 ? " - " : " + ";
    else if (t.coeff < 0)
      s += "-";
    int64_t c = t.coeff < 0 ? -t.coeff : t.coeff;
    if (c != 1) s += std::to_string(c) + "*";
    s += t.var;
  }
  if (s.empty()) return std::to_string(offset);
  if (offset > 0) s += " + " + std::to_string(offset);
  if (offset < 0) s += " - " + std::to_string(-offset);
  return s;
}

DimExpr DimExpr::operator+(const DimExpr& o) const {
  std::map<std::string, int64_t> sum;
  for (const DimTerm& t : terms) sum[t.var] += t.coeff;
  for (const DimTerm& t : o.terms) sum[t.var] += t.coeff;
  DimExpr r{offset + o.offset, {}};
  for (auto& [v, c] : sum)
    if (c != 0) r.terms.push_back({v, c});
  return r;
}

DimExpr DimExpr::operator*(int64_t k) const {
  if (k == 0) return constant(0);
  DimExpr r{offset * k, terms};
  for (DimTerm& t : r.terms) t.coeff *= k;
  return r;
}

std::string shape_expr_str(const ShapeExpr& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  return s + "]";
}

bool is_static(const ShapeExpr& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const DimExpr& d) { return d.is_constant(); });
}

ShapeExpr constant_shape(const std::vector<int64_t>& shape) {
  ShapeExpr dims;
  for (int64_t d : shape) dims.push_back(DimExpr::constant(d));
  return dims;
}

std::vector<int64_t> eval_shape(const ShapeExpr& dims, const std::map<std::string, int64_t>& values) {
  std::vector<int64_t> shape;
  for (const DimExpr& d : dims) shape.push_back(d.eval(values));
  return shape;
}

std::string bind_shape(const ShapeExpr& dims, const std::vector<int64_t>& shape,
                       std::map<std::string, int64_t>& values) {
  if (dims.size() != shape.size())
    return "it has " + std::to_string(shape.size()) + " dimensions, not " + std::to_string(dims.size());
  std::map<std::string, size_t> bound_at;
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string* v = dims[i].as_variable();
    if (!v) continue;
    auto [it, is_new] = values.emplace(*v, shape[i]);
    if (is_new) bound_at[*v] = i;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    for (const DimTerm& t : dims[i].terms)
      if (!values.count(t.var))
        return "variable '" + t.var + "' of dimension " + std::to_string(i) + " (" + dims[i].str() +
               ") is not a whole dimension of any argument, so no shape gives its value";
    int64_t want = dims[i].eval(values);
    if (want == shape[i]) continue;
    std::string why = "dimension " + std::to_string(i) + " is " + std::to_string(shape[i]) + ", not " + dims[i].str() +
                      " = " + std::to_string(want);
    for (const DimTerm& t : dims[i].terms) {
      why += "; " + t.var + " = " + std::to_string(values.at(t.var));
      auto at = bound_at.find(t.var);
      if (at != bound_at.end()) why += " from dimension " + std::to_string(at->second);
    }
    return why;
  }
  return "";
}

std::pair<int64_t, int64_t> dim_range(const DimExpr& d, const std::vector<ShapeVar>& vars) {
  int64_t lo = d.offset, hi = d.offset;
  for (const DimTerm& t : d.terms) {
    auto v = std::find_if(vars.begin(), vars.end(), [&](const ShapeVar& s) { return s.name == t.var; });
    if (v == vars.end()) LOOM_THROW(RuntimeError, "shape variable '", t.var, "' is not declared");
    lo += t.coeff * (t.coeff > 0 ? v->min : v->max);
    hi += t.coeff * (t.coeff > 0 ? v->max : v->min);
  }
  return {lo, hi};
}

std::vector<std::string> shape_variables(const ShapeExpr& dims) {
  std::set<std::string> vars;
  for (const DimExpr& d : dims)
    for (const DimTerm& t : d.terms) vars.insert(t.var);
  return {vars.begin(), vars.end()};
}

nlohmann::json dims_to_json(const ShapeExpr& dims) {
  nlohmann::json j = nlohmann::json::array();
  for (const DimExpr& d : dims) {
    if (d.is_constant()) {
      j.push_back(d.offset);
      continue;
    }
    nlohmann::json terms = nlohmann::json::array();
    for (const DimTerm& t : d.terms) terms.push_back({t.var, t.coeff});
    j.push_back({{"offset", d.offset}, {"terms", terms}});
  }
  return j;
}

ShapeExpr dims_from_json(const nlohmann::json& j) {
  ShapeExpr dims;
  for (const auto& d : j) {
    if (d.is_number_integer()) {
      dims.push_back(DimExpr::constant(d.get<int64_t>()));
      continue;
    }
    DimExpr e = DimExpr::constant(d.at("offset").get<int64_t>());
    for (const auto& t : d.at("terms")) {
      DimExpr term = DimExpr::variable(t.at(0).get<std::string>()) * t.at(1).get<int64_t>();
      if (term.terms.empty() || e.terms.size() + 1 != (e + term).terms.size())
        throw std::invalid_argument("dimension terms must be distinct variables with nonzero coefficients");
      e = e + term;
    }
    dims.push_back(std::move(e));
  }
  return dims;
}

}  // namespace loom::runtime
