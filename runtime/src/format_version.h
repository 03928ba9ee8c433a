// Internal to loom_runtime: the one check of a file format's version (compiled-model files,
// executor graphs), so that a file from a newer Loom says so in the same words everywhere.
#pragma once
#include <cstdint>
#include <string>

#include "loom/runtime/error.h"

namespace loom::runtime {

// ModelError naming `origin` unless 1 <= version <= newest; `what` names the format
// ("compiled model format", "executor graph").
inline void check_format_version(const std::string& origin, const char* what, int64_t version, int64_t newest) {
  if (version > newest)
    LOOM_THROW(ModelError, origin, ": ", what, " version ", version,
               " was written by a newer Loom; this runtime reads versions 1 to ", newest,
               " (update Loom, or recompile the model with this one)");
  if (version < 1)
    LOOM_THROW(ModelError, origin, ": ", what, " version ", version, ", this runtime reads versions 1 to ", newest);
}

}  // namespace loom::runtime
