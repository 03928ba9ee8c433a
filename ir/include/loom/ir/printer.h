// Readable pseudo-code for expressions, statements and lowered functions.
#pragma once
#include <ostream>

#include "loom/ir/expr.h"
#include "loom/ir/stmt.h"

namespace loom::ir {
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);
}  // namespace loom::ir
