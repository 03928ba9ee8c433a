#include <gtest/gtest.h>

#include <cmath>

#include "loom/runtime/error.h"
#include "loom/runtime/ndarray.h"

namespace loom {
namespace {

TEST(DataType, ParseAndPrint) {
  for (const char* s : {"int8", "int16", "int32", "uint8", "float16", "float32", "float64", "float32x16", "bool"})
    EXPECT_EQ(DataType::parse(s).str(), s);
  EXPECT_THROW(DataType::parse("int"), TypeError);
  EXPECT_THROW(DataType::parse("complex64"), TypeError);
}

TEST(NDArray, DLPackRoundTripAndAlignment) {
  NDArray a = NDArray::empty({3, 5}, DataType::Int(16));
  a.fill_random(7, -100, 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 64, 0u);
  DLManagedTensor* m = a.to_dlpack();
  NDArray b = NDArray::from_dlpack(m->dl_tensor);
  m->deleter(m);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.get_as_double(i), b.get_as_double(i));
  // A transposed (strided) view is compacted on import.
  DLTensor t = a.dl_tensor();
  int64_t shape[2] = {5, 3}, strides[2] = {1, 5};
  t.shape = shape;
  t.strides = strides;
  NDArray c = NDArray::from_dlpack(t);
  EXPECT_EQ(c.get_as_double(1 * 3 + 2), a.get_as_double(2 * 5 + 1));
}

TEST(NDArray, HalfConversion) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 1e-7f}) EXPECT_NEAR(half_to_float(float_to_half(f)), f, std::fabs(f) * 1e-3 + 6e-8);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
}

TEST(NDArray, BadShapesAndTypes) {
  EXPECT_THROW(NDArray::empty({-1}, DataType::Float(32)), ShapeError);
  EXPECT_THROW(NDArray::empty({2}, DataType::Int(4)), TypeError);
}

}  // namespace
}  // namespace loom
