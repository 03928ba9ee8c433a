#include "loom/runtime/ndarray.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "loom/runtime/cuda.h"
#include "loom/runtime/error.h"

namespace loom {

namespace {
constexpr size_t kAlignment = 64;

// Float to integer with a defined result for every input: truncation toward zero, saturated to
// T's range, NaN to 0. A plain cast of an out-of-range double is undefined behaviour (an ONNX
// Cast of 1e16 to uint8 reached it through the importer's constant folding).
template <typename T>
T saturate_to(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  // max() of a 64-bit type rounds up to 2^64 or 2^63 as a double, so compare with >=.
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

std::shared_ptr<void> allocate(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!p) LOOM_THROW(RuntimeError, "out of host memory allocating ", bytes, " bytes");
  return std::shared_ptr<void>(p, std::free);
}
}  // namespace

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

NDArray NDArray::described(std::vector<int64_t> shape, DataType dtype) {
  if (!is_supported_tensor_type(dtype)) LOOM_THROW(TypeError, "NDArray: unsupported element type ", dtype.str());
  for (int64_t d : shape)
    if (d < 0) LOOM_THROW(ShapeError, "NDArray: negative extent in shape ", shape_str(shape));
  NDArray a;
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  return a;
}

NDArray NDArray::empty(std::vector<int64_t> shape, DataType dtype) {
  NDArray a = described(std::move(shape), dtype);
  a.storage_ = allocate(a.nbytes());
  return a;
}

NDArray NDArray::empty(std::vector<int64_t> shape, DataType dtype, DLDevice device) {
  if (device.device_type == kDLCPU) return empty(std::move(shape), dtype);
  if (device.device_type != kDLCUDA)
    LOOM_THROW(DeviceError, "NDArray: no memory on DLPack device type ", int(device.device_type),
               " (this runtime has kDLCPU and kDLCUDA)");
  NDArray a = described(std::move(shape), dtype);
  a.device_ = device;
  int ordinal = device.device_id;
  void* p = runtime::cuda_alloc(std::max<size_t>(a.nbytes(), 1), ordinal);
  a.storage_ = std::shared_ptr<void>(p, [ordinal](void* q) { runtime::cuda_free(q, ordinal); });
  return a;
}

NDArray NDArray::to_device(DLDevice device) const {
  if (device.device_type == device_.device_type && device.device_id == device_.device_id) return *this;
  NDArray out = empty(shape_, dtype_, device);
  if (nbytes() == 0) return out;
  if (on_host())
    runtime::cuda_copy_to_device(out.raw_data(), raw_data(), nbytes(), device.device_id);
  else if (out.on_host())
    runtime::cuda_copy_to_host(out.raw_data(), raw_data(), nbytes(), device_.device_id);
  else
    LOOM_THROW(DeviceError, "NDArray: copies between two GPUs are not supported");
  return out;
}

void NDArray::require_host(const char* what) const {
  if (!on_host())
    LOOM_THROW(DeviceError, "NDArray::", what, ": ", describe(),
               " lives on a GPU; copy it with to_device({kDLCPU, 0})");
}

NDArray NDArray::zeros(std::vector<int64_t> shape, DataType dtype) {
  NDArray a = empty(std::move(shape), dtype);
  std::memset(a.raw_data(), 0, a.nbytes());
  return a;
}

int64_t NDArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

DLTensor NDArray::dl_tensor() const {
  DLTensor t{};
  t.data = raw_data();
  t.device = device_;
  t.ndim = ndim();
  t.dtype = dtype_.dl();
  t.shape = const_cast<int64_t*>(shape_.data());
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  return t;
}

DLManagedTensor* NDArray::to_dlpack() const {
  struct Context {
    NDArray keep;
  };
  auto* managed = new DLManagedTensor{};
  auto* ctx = new Context{*this};
  managed->dl_tensor = ctx->keep.dl_tensor();
  managed->manager_ctx = ctx;
  managed->deleter = [](DLManagedTensor* self) {
    delete static_cast<Context*>(self->manager_ctx);
    delete self;
  };
  return managed;
}

NDArray NDArray::from_dlpack(const DLTensor& t) {
  if (t.device.device_type != kDLCPU) LOOM_THROW(RuntimeError, "from_dlpack: only CPU tensors can be imported");
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  NDArray a = empty(shape, DataType(t.dtype));
  const int elem = a.dtype().bytes();
  const auto* base = static_cast<const uint8_t*>(t.data) + t.byte_offset;
  std::vector<int64_t> idx(t.ndim, 0);
  for (int64_t flat = 0; flat < a.numel(); ++flat) {
    int64_t off = 0, rem = flat;
    for (int d = t.ndim - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    int64_t stride = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      off += idx[d] * (t.strides ? t.strides[d] : stride);
      stride *= shape[d];
    }
    std::memcpy(static_cast<uint8_t*>(a.raw_data()) + flat * elem, base + off * elem, elem);
  }
  return a;
}

NDArray NDArray::copy() const {
  if (!on_host()) {
    NDArray a = empty(shape_, dtype_, device_);
    if (nbytes()) runtime::cuda_copy_device(a.raw_data(), raw_data(), nbytes(), device_.device_id);
    return a;
  }
  NDArray a = empty(shape_, dtype_);
  std::memcpy(a.raw_data(), raw_data(), nbytes());
  return a;
}

double NDArray::get_as_double(int64_t i) const {
  require_host("get_as_double");
  const void* p = static_cast<const uint8_t*>(raw_data()) + i * dtype_.bytes();
  switch (dtype_.code()) {
    case DataType::Code::Float:
      if (dtype_.bits() == 16) return half_to_float(*static_cast<const uint16_t*>(p));
      if (dtype_.bits() == 32) return *static_cast<const float*>(p);
      return *static_cast<const double*>(p);
    case DataType::Code::Int:
      switch (dtype_.bits()) {
        case 8:
          return *static_cast<const int8_t*>(p);
        case 16:
          return *static_cast<const int16_t*>(p);
        case 32:
          return *static_cast<const int32_t*>(p);
        default:
          return static_cast<double>(*static_cast<const int64_t*>(p));
      }
    case DataType::Code::UInt:
      switch (dtype_.bits()) {
        case 1:
          return *static_cast<const uint8_t*>(p) != 0;
        case 8:
          return *static_cast<const uint8_t*>(p);
        case 16:
          return *static_cast<const uint16_t*>(p);
        case 32:
          return *static_cast<const uint32_t*>(p);
        default:
          return static_cast<double>(*static_cast<const uint64_t*>(p));
      }
  }
  return 0;
}

void NDArray::set_from_double(int64_t i, double v) {
  require_host("set_from_double");
  void* p = static_cast<uint8_t*>(raw_data()) + i * dtype_.bytes();
  switch (dtype_.code()) {
    case DataType::Code::Float:
      if (dtype_.bits() == 16)
        *static_cast<uint16_t*>(p) = float_to_half(static_cast<float>(v));
      else if (dtype_.bits() == 32)
        *static_cast<float*>(p) = static_cast<float>(v);
      else
        *static_cast<double*>(p) = v;
      return;
    case DataType::Code::Int:
      switch (dtype_.bits()) {
        case 8:
          *static_cast<int8_t*>(p) = saturate_to<int8_t>(v);
          return;
        case 16:
          *static_cast<int16_t*>(p) = saturate_to<int16_t>(v);
          return;
        case 32:
          *static_cast<int32_t*>(p) = saturate_to<int32_t>(v);
          return;
        default:
          *static_cast<int64_t*>(p) = saturate_to<int64_t>(v);
          return;
      }
    case DataType::Code::UInt:
      switch (dtype_.bits()) {
        case 1:
          *static_cast<uint8_t*>(p) = v != 0;
          return;
        case 8:
          *static_cast<uint8_t*>(p) = saturate_to<uint8_t>(v);
          return;
        case 16:
          *static_cast<uint16_t*>(p) = saturate_to<uint16_t>(v);
          return;
        case 32:
          *static_cast<uint32_t*>(p) = saturate_to<uint32_t>(v);
          return;
        default:
          *static_cast<uint64_t*>(p) = saturate_to<uint64_t>(v);
          return;
      }
  }
}

void NDArray::fill_random(uint64_t seed, double lo, double hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  const int64_t n = numel();
  if (dtype_ == DataType::Float(32)) {  // the common case without a per-element type switch
    float* p = data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(real(gen));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = real(gen);
    if (!dtype_.is_float()) v = std::nearbyint(v);
    set_from_double(i, v);
  }
}

std::string NDArray::describe() const { return dtype_.str() + shape_str(shape_); }

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // round to nearest even
  return static_cast<uint16_t>(half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      x = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | mant << 13;
  } else {
    x = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace loom
