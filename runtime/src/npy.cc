#include "loom/runtime/npy.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "loom/runtime/error.h"

namespace loom::runtime {

namespace {

// NumPy's type strings for the element types Loom stores.
std::string descr_of(DataType t) {
  if (t.is_bool()) return "|b1";
  char kind = t.is_float() ? 'f' : t.is_int() ? 'i' : 'u';
  if (t.bytes() == 1) return std::string("|") + kind + "1";
  return std::string("<") + kind + std::to_string(t.bytes());
}

DataType dtype_of(const std::string& descr, const std::string& origin) {
  static const std::pair<const char*, DataType> table[] = {
      {"<f4", DataType::Float(32)}, {"<f2", DataType::Float(16)}, {"<f8", DataType::Float(64)},
      {"|i1", DataType::Int(8)},    {"<i2", DataType::Int(16)},   {"<i4", DataType::Int(32)},
      {"<i8", DataType::Int(64)},   {"|u1", DataType::UInt(8)},   {"<u2", DataType::UInt(16)},
      {"<u4", DataType::UInt(32)},  {"|b1", DataType::Bool()},    {"<u8", DataType::UInt(64)}};
  for (auto& [d, t] : table)
    if (descr == d) return t;
  LOOM_THROW(RuntimeError, origin, ": unsupported .npy dtype '", descr,
             "' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool, little-endian)");
}

// Value of `key` in the header dict: the text after "'key':" up to the next top-level ',' or '}'.
std::string dict_value(const std::string& header, const std::string& key, const std::string& origin) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) LOOM_THROW(RuntimeError, origin, ": .npy header has no '", key, "' entry");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) LOOM_THROW(RuntimeError, origin, ": malformed .npy header");
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  int depth = 0;
  size_t j = i;
  for (; j < header.size(); ++j) {
    char c = header[j];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  if (j >= header.size() || depth != 0) LOOM_THROW(RuntimeError, origin, ": malformed .npy header");
  return header.substr(i, j - i);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& origin) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    LOOM_THROW(RuntimeError, origin, ": malformed .npy shape '", text, "'");
  std::vector<int64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;  // "(3,)" has an empty last item
    item = item.substr(b, e - b + 1);
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0) LOOM_THROW(RuntimeError, origin, ": malformed .npy shape '", text, "'");
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

NDArray parse_npy(const std::string& bytes, const std::string& origin) {
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    LOOM_THROW(RuntimeError, origin, ": not a NumPy .npy file (bad magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) LOOM_THROW(RuntimeError, origin, ": truncated .npy header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    LOOM_THROW(RuntimeError, origin, ": unsupported .npy format version ", major);
  }
  if (bytes.size() < offset + header_len) LOOM_THROW(RuntimeError, origin, ": truncated .npy header");
  std::string header = bytes.substr(offset, header_len);
  std::string descr = dict_value(header, "descr", origin);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
    LOOM_THROW(RuntimeError, origin, ": malformed .npy dtype ", descr);
  DataType dtype = dtype_of(descr.substr(1, descr.size() - 2), origin);
  if (dict_value(header, "fortran_order", origin) != "False")
    LOOM_THROW(RuntimeError, origin,
               ": Fortran-ordered .npy arrays are not supported (save with np.ascontiguousarray)");
  std::vector<int64_t> shape = parse_shape(dict_value(header, "shape", origin), origin);
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d))
      LOOM_THROW(RuntimeError, origin, ": .npy shape ", shape_str(shape), " is too large");
    count *= static_cast<uint64_t>(d);
  }
  uint64_t nbytes = count * dtype.bytes();
  uint64_t available = bytes.size() - offset - header_len;
  if (available != nbytes)
    LOOM_THROW(RuntimeError, origin, ": .npy data has ", available, " bytes, ", dtype.str(), shape_str(shape),
               " needs ", nbytes, available < nbytes ? " (truncated file)" : " (trailing bytes)");
  NDArray a = NDArray::empty(shape, dtype);
  if (nbytes) std::memcpy(a.raw_data(), bytes.data() + offset + header_len, nbytes);
  return a;
}

NDArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) LOOM_THROW(RuntimeError, "cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), "'" + path + "'");
}

void write_npy(const std::string& path, const NDArray& a) {
  if (!a.defined()) LOOM_THROW(RuntimeError, "write_npy '", path, "': undefined array");
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i)
    shape += std::to_string(a.shape()[i]) + (a.shape().size() == 1 ? "," : i + 1 < a.shape().size() ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + descr_of(a.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) LOOM_THROW(RuntimeError, "cannot write '", path, "'");
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(static_cast<const char*>(a.raw_data()), static_cast<std::streamsize>(a.nbytes()));
  if (!out) LOOM_THROW(RuntimeError, "cannot write '", path, "'");
}

}  // namespace loom::runtime
