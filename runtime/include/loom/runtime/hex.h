// A number as messages and reports write addresses and register values: "0x1bf14b090".
#pragma once
#include <cstdint>
#include <sstream>
#include <string>

namespace loom {

inline std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace loom
