#include <gtest/gtest.h>

#include <cmath>

#include "loom/runtime/error.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/npy.h"
#include "common/error_text.h"
#include "common/temp_dir.h"

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

// .npy bytes built here by hand (header padded to 64 bytes as NumPy writes it): a 2x3 int16
// array parses; one byte too many or too few is an error that says which; shapes of every rank.
std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string b = "\x93NUMPY";
  b += char(1);
  b += char(0);
  b += char(header.size() & 0xff);
  b += char(header.size() >> 8);
  return b + header + data;
}

TEST(Npy, ParsesHandWrittenBytesAndRejectsWrongSizes) {
  using runtime::parse_npy, runtime::read_npy, runtime::write_npy;
  std::string data;
  for (int16_t v : {1, -2, 3, -4, 5, 300}) data.append(reinterpret_cast<const char*>(&v), 2);
  NDArray a = parse_npy(npy_bytes("<i2", "(2, 3)", data), "a.npy");
  ASSERT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.dtype(), DataType::Int(16));
  EXPECT_EQ(a.get_as_double(5), 300);
  EXPECT_EQ(a.get_as_double(1), -2);
  std::string e = test::error_text<RuntimeError>([&] { parse_npy(npy_bytes("<i2", "(2, 3)", data + "x"), "b.npy"); });
  EXPECT_NE(e.find("b.npy: .npy data has 13 bytes, int16[2, 3] needs 12 (trailing bytes)"), std::string::npos) << e;
  e = test::error_text<RuntimeError>([&] { parse_npy(npy_bytes("<i2", "(2, 3)", data.substr(1)), "c.npy"); });
  EXPECT_NE(e.find("(truncated file)"), std::string::npos) << e;
  EXPECT_EQ(parse_npy(npy_bytes("<f4", "()", std::string(4, '\0')), "s").shape(), std::vector<int64_t>{});
  EXPECT_EQ(parse_npy(npy_bytes("<f4", "(0, 5)", ""), "z").numel(), 0);
  EXPECT_EQ(parse_npy(npy_bytes("|i1", "(4,)", "abcd"), "v").shape(), std::vector<int64_t>{4});
  // What write_npy writes, parse_npy reads back.
  test::TestDir dir;
  write_npy(dir.file("a.npy"), a);
  NDArray back = read_npy(dir.file("a.npy"));
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(back.get_as_double(i), a.get_as_double(i));
}

}  // namespace
}  // namespace loom
