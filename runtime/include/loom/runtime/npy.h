// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) <-> NDArray, so model inputs
// and outputs can be exchanged with Python. Malformed files, unsupported dtypes and Fortran order
// throw RuntimeError naming the file and what is wrong.
#pragma once
#include <string>

#include "loom/runtime/ndarray.h"

namespace loom::runtime {

NDArray read_npy(const std::string& path);
// Parses .npy bytes; `origin` names them in errors.
NDArray parse_npy(const std::string& bytes, const std::string& origin);
void write_npy(const std::string& path, const NDArray& array);

}  // namespace loom::runtime
