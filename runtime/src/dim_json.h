// JSON of symbolic dimensions (dim_expr.h), shared by the module metadata and the executor graph:
// a constant dimension is a number, a symbolic one {"offset": 1, "terms": [["seq", 2]]}.
#pragma once
#include <nlohmann/json.hpp>

#include "loom/runtime/dim_expr.h"

namespace loom::runtime {

nlohmann::json dims_to_json(const ShapeExpr& dims);
// std::invalid_argument or nlohmann::json::exception on a malformed description.
ShapeExpr dims_from_json(const nlohmann::json& j);

}  // namespace loom::runtime
