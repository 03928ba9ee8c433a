// NDArray: a reference-counted, compact row-major tensor whose view is a DLPack DLTensor. It lives on
// the host (kDLCPU, 64-byte aligned) unless made on a GPU (kDLCUDA, runtime/cuda.h): element access
// and fill_random need a host array (DeviceError otherwise); to_device copies between devices.
// Copies share storage; use copy() for a deep copy.
#pragma once
#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/dtype.h"

namespace loom {

class NDArray {
 public:
  NDArray() = default;
  static NDArray empty(std::vector<int64_t> shape, DataType dtype);
  // On `device`: kDLCPU, or kDLCUDA (runtime/cuda.h; DeviceError without a usable GPU).
  static NDArray empty(std::vector<int64_t> shape, DataType dtype, DLDevice device);
  static NDArray zeros(std::vector<int64_t> shape, DataType dtype);
  // Copies a DLPack tensor (any strides) into a new compact NDArray.
  static NDArray from_dlpack(const DLTensor& t);

  bool defined() const { return storage_ != nullptr; }
  DLDevice device() const { return device_; }
  bool on_host() const { return device_.device_type == kDLCPU; }
  // A copy on `device` (this array itself when it already lives there).
  NDArray to_device(DLDevice device) const;
  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  DataType dtype() const { return dtype_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_.bytes(); }
  void* raw_data() const { return storage_.get(); }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }

  // A DLTensor that views this array (valid while this NDArray lives).
  DLTensor dl_tensor() const;
  // Hands a reference to the storage to DLPack consumers; call deleter to release it.
  DLManagedTensor* to_dlpack() const;

  NDArray copy() const;  // on the same device
  // Element access as double, for tests and printing (any dtype; fp16 is decoded).
  double get_as_double(int64_t flat_index) const;
  // Integer dtypes truncate toward zero and saturate (NaN stores 0), so every double is defined.
  void set_from_double(int64_t flat_index, double v);
  // Fills with reproducible pseudo-random values in [lo, hi] (integers rounded).
  void fill_random(uint64_t seed, double lo = -1.0, double hi = 1.0);

  std::string describe() const;  // "float32[4, 8]"

 private:
  std::shared_ptr<void> storage_;
  std::vector<int64_t> shape_;
  DataType dtype_;
  DLDevice device_{kDLCPU, 0};
  void require_host(const char* what) const;
  static NDArray described(std::vector<int64_t> shape, DataType dtype);  // checked shape and type, no storage
};

// IEEE half <-> float, for fp16 tensors on the host.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace loom
