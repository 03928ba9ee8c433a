// Dimensions known at compile time only up to the values of named shape variables ("seq",
// "past"): each an affine form offset + sum of coeff * variable. The compiler writes them into a
// kernel's signature and a compiled model's values; at run time the variables are bound from the
// inputs' shapes (bind_shape) and every other shape follows (eval). A constant dimension has no
// terms.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loom::runtime {

struct DimTerm {
  std::string var;
  int64_t coeff = 1;
  bool operator==(const DimTerm& o) const { return var == o.var && coeff == o.coeff; }
};

struct DimExpr {
  int64_t offset = 0;
  std::vector<DimTerm> terms;  // sorted by variable, no zero coefficient, each variable once

  static DimExpr constant(int64_t value) { return {value, {}}; }
  static DimExpr variable(const std::string& name) { return {0, {{name, 1}}}; }
  bool is_constant() const { return terms.empty(); }
  // The variable this dimension is (coefficient 1, offset 0), or null.
  const std::string* as_variable() const;
  // Its value; RuntimeError naming the variable if `values` lacks one.
  int64_t eval(const std::map<std::string, int64_t>& values) const;
  std::string str() const;  // "64", "seq", "past + seq", "2*seq + 1"
  bool operator==(const DimExpr& o) const { return offset == o.offset && terms == o.terms; }
  bool operator!=(const DimExpr& o) const { return !(*this == o); }

  // Sums and scalings keep the canonical form (terms sorted, zeros dropped).
  DimExpr operator+(const DimExpr& o) const;
  DimExpr operator*(int64_t k) const;
};

using ShapeExpr = std::vector<DimExpr>;

// A shape variable and its range: a dimension known only at run time ("seq in [1, 512]"). It may
// be 0 (a key/value cache before the first token; its maximum is then at least 2): a tensor
// whose extent it is holds no elements then, and the importer's probes never take 0.
struct ShapeVar {
  std::string name;
  int64_t min = 1, max = 1;
  bool operator==(const ShapeVar& o) const { return name == o.name && min == o.min && max == o.max; }
};
// The smallest and largest value of `d` over the variables' ranges; RuntimeError naming a
// variable that `vars` lacks.
std::pair<int64_t, int64_t> dim_range(const DimExpr& d, const std::vector<ShapeVar>& vars);

std::string shape_expr_str(const ShapeExpr& dims);  // "[1, seq, 64]"
bool is_static(const ShapeExpr& dims);              // every dimension constant
ShapeExpr constant_shape(const std::vector<int64_t>& shape);
// The shape at these variable values.
std::vector<int64_t> eval_shape(const ShapeExpr& dims, const std::map<std::string, int64_t>& values);
// Binds the variables that are whole dimensions of `dims` from `shape` (adding to `values`), then
// checks every dimension. Returns what disagrees ("dimension 1 is 7, seq is 5 from dimension
// 0"), empty if the shape fits.
std::string bind_shape(const ShapeExpr& dims, const std::vector<int64_t>& shape,
                       std::map<std::string, int64_t>& values);
// Every variable the dimensions use, sorted.
std::vector<std::string> shape_variables(const ShapeExpr& dims);

}  // namespace loom::runtime
