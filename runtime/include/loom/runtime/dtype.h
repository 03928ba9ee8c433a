// Element types, stored in DLPack's layout so tensors can be shared with other frameworks.
#pragma once
#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace loom {

class DataType {
 public:
  enum class Code : uint8_t { Int = kDLInt, UInt = kDLUInt, Float = kDLFloat };

  constexpr DataType() : DataType(Code::Int, 32, 1) {}
  constexpr DataType(Code code, int bits, int lanes = 1)
      : dl_{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)} {}
  explicit DataType(DLDataType dl) : dl_(dl) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::Int, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::UInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::Float, bits, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {Code::UInt, 1, lanes}; }

  Code code() const { return static_cast<Code>(dl_.code); }
  int bits() const { return dl_.bits; }
  int lanes() const { return dl_.lanes; }
  int bytes() const { return (bits() + 7) / 8; }  // per lane
  bool is_int() const { return code() == Code::Int; }
  bool is_uint() const { return code() == Code::UInt && bits() > 1; }
  bool is_bool() const { return code() == Code::UInt && bits() == 1; }
  bool is_float() const { return code() == Code::Float; }
  bool is_integer() const { return is_int() || is_uint(); }
  bool is_scalar() const { return lanes() == 1; }
  bool is_vector() const { return lanes() > 1; }
  DataType element_of() const { return with_lanes(1); }
  DataType with_lanes(int lanes) const { return {code(), bits(), lanes}; }
  DLDataType dl() const { return dl_; }

  bool operator==(const DataType& o) const {
    return dl_.code == o.dl_.code && dl_.bits == o.dl_.bits && dl_.lanes == o.dl_.lanes;
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }

  // "int8", "float32", "float32x16", "bool".
  std::string str() const;
  // Inverse of str(); throws TypeError naming the string.
  static DataType parse(const std::string& s);

 private:
  DLDataType dl_;
};

// The element types Loom's compiler supports for tensors.
bool is_supported_tensor_type(DataType t);

}  // namespace loom
