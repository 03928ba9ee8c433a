#include "loom/runtime/dtype.h"

#include "loom/runtime/error.h"

namespace loom {

std::string DataType::str() const {
  std::string s;
  if (is_bool()) {
    s = "bool";
  } else {
    s = is_float() ? "float" : is_int() ? "int" : "uint";
    s += std::to_string(bits());
  }
  if (lanes() != 1) s += "x" + std::to_string(lanes());
  return s;
}

DataType DataType::parse(const std::string& s) {
  // Decimal digits only, and a small number (files are untrusted: std::stoi would throw
  // std::invalid_argument or out_of_range, found by fuzz_executor_graph).
  auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
      LOOM_THROW(TypeError, "cannot parse data type '", s, "'");
    return std::stoi(digits);
  };
  auto lanes_at = s.find('x');
  int lanes = lanes_at == std::string::npos ? 1 : number(s.substr(lanes_at + 1));
  std::string base = s.substr(0, lanes_at);
  auto bits_of = [&](size_t prefix) { return number(base.substr(prefix)); };
  if (base == "bool") return Bool(lanes);
  if (base.rfind("float", 0) == 0) return Float(bits_of(5), lanes);
  if (base.rfind("uint", 0) == 0) return UInt(bits_of(4), lanes);
  if (base.rfind("int", 0) == 0) return Int(bits_of(3), lanes);
  LOOM_THROW(TypeError, "cannot parse data type '", s, "'");
}

bool is_supported_tensor_type(DataType t) {
  if (!t.is_scalar()) return false;
  if (t.is_bool()) return true;  // one byte per element, 0 or 1 (numpy's and ONNX's bool)
  if (t.is_int() || t.is_uint()) return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  if (t.is_float()) return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  return false;
}

}  // namespace loom
