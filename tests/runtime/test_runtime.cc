#include <gtest/gtest.h>

#include <cmath>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/runtime/error.h"
#include "loom/runtime/model_file.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/npy.h"

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
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 1e-7f})
    EXPECT_NEAR(half_to_float(float_to_half(f)), f, std::fabs(f) * 1e-3 + 6e-8);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
}

// Out-of-range and NaN doubles stored into integer arrays saturate (truncating toward zero)
// instead of being undefined behaviour; found by fuzz_onnx through a folded Cast to uint8.
TEST(NDArray, IntegerStoresSaturate) {
  const double nan = std::nan("");
  struct Case {
    DataType t;
    double v, want;
  };
  for (Case c :
       {Case{DataType::UInt(8), 1.8e16, 255}, Case{DataType::UInt(8), -3.7, 0}, Case{DataType::UInt(8), 7.9, 7},
        Case{DataType::Int(8), 200, 127}, Case{DataType::Int(8), -1e300, -128}, Case{DataType::Int(8), -2.9, -2},
        Case{DataType::Int(16), 1e9, 32767}, Case{DataType::UInt(16), nan, 0},
        Case{DataType::Int(32), 3e9, 2147483647.0}, Case{DataType::Int(32), -3e9, -2147483648.0},
        Case{DataType::UInt(32), 1e10, 4294967295.0}, Case{DataType::Int(64), nan, 0},
        Case{DataType::Int(64), 1e19, 9223372036854775807.0}, Case{DataType::Int(64), -1e19, -9223372036854775808.0},
        Case{DataType::UInt(64), -1, 0}, Case{DataType::UInt(64), 1e20, 18446744073709551615.0}}) {
    NDArray a = NDArray::zeros({1}, c.t);
    a.set_from_double(0, c.v);
    EXPECT_EQ(a.get_as_double(0), c.want) << c.t.str() << " <- " << c.v;
  }
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

// Compiled-model files built here by hand from the documented layout ("LOOMMODL", u32 version,
// u32 section count, then per section [a 4-byte kind, from version 3 on,] u64 length + bytes,
// then a 64-bit FNV-1a hash of everything before it).
struct Section {
  std::string kind;  // "GRPH", "PARM", "KLIB", "ACCL"; empty in versions 1 and 2
  std::string bytes;
};
std::string model_bytes(uint32_t version, const std::vector<Section>& sections, const std::string& extra = "") {
  std::string b = "LOOMMODL";
  auto put = [&](auto v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(version);
  put(uint32_t(sections.size()));
  for (auto& s : sections) {
    b += s.kind;
    put(uint64_t(s.bytes.size()));
    b += s.bytes;
  }
  b += extra;  // bytes after the last section, covered by the hash
  // The format's offset basis is 1469598103934665603, one digit short of standard FNV-1a's
  // 14695981039346656037 (runtime/src/model_file.cc); files in the wild use it, so this does too.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
  put(h);
  return b;
}
// Version 1: graph, parameters, library by position.
std::string model_bytes(const std::vector<std::string>& sections, const std::string& extra = "") {
  std::vector<Section> untagged;
  for (auto& s : sections) untagged.push_back({"", s});
  return model_bytes(1, untagged, extra);
}

TEST(ModelFile, ParsesHandBuiltFilesAndRejectsBytesAfterTheLastSection) {
  using runtime::parse_model_file;
  std::string params(100, '\x07');
  runtime::ModelFile m = parse_model_file(model_bytes({"{\"graph\": 1}", params, "ELF"}), "m.loom");
  EXPECT_EQ(m.graph_json, "{\"graph\": 1}");
  EXPECT_EQ(m.params_bytes, 100u);
  EXPECT_EQ(m.params.get()[99], 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.params.get()) % 64, 0u);
  EXPECT_EQ(m.library, "ELF");
  // Extra bytes with a correct hash: only the section walk can notice them.
  std::string e = test::error_text<ModelError>([&] {
    parse_model_file(model_bytes({"{}", params, "ELF"}, "xy"), "x.loom");
  });
  EXPECT_NE(e.find("x.loom: 2 unexpected bytes after the last section"), std::string::npos) << e;
  e = test::error_text<ModelError>([&] {
    parse_model_file(model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}, {"KLIB", "ELF"}}, "xyz"), "x3.loom");
  });
  EXPECT_NE(e.find("x3.loom: 3 unexpected bytes after the last section"), std::string::npos) << e;
  std::string bad = model_bytes({"{}", params, "ELF"});
  bad[40] ^= 1;  // a byte of the parameters
  e = test::error_text<ModelError>([&] { parse_model_file(bad, "c.loom"); });
  EXPECT_NE(e.find("c.loom: compiled model is corrupted (checksum mismatch)"), std::string::npos) << e;
  std::string longer = model_bytes({"{}", params, "ELF"});
  longer[8 + 4 + 4 + 8 + 2] = 101;  // the parameters' length, one more than there is
  e = test::error_text<ModelError>([&] { parse_model_file(longer, "t.loom"); });
  EXPECT_NE(e.find("t.loom: truncated compiled model (the kernel library needs"), std::string::npos) << e;
  e = test::error_text<ModelError>([&] { parse_model_file(model_bytes({"{}", params}), "s.loom"); });
  EXPECT_NE(e.find("s.loom: compiled model has 2 sections, expected 3"), std::string::npos) << e;
  // save_model_file writes version 3: sections by kind.
  test::TestDir dir;
  runtime::save_model_file(dir.file("m.loom"), m);
  std::string saved;
  {
    std::FILE* f = std::fopen(dir.file("m.loom").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    for (int c; (c = std::fgetc(f)) != EOF;) saved += char(c);
    std::fclose(f);
  }
  EXPECT_EQ(saved, model_bytes(3, {{"GRPH", "{\"graph\": 1}"}, {"PARM", params}, {"KLIB", "ELF"}}));
}

// Version 3 finds its sections by kind (any order), and says what is wrong with a file from a
// newer Loom, an unknown, repeated or missing section; version 2 (by position, with the
// accelerator image fourth) is still read.
TEST(ModelFile, SectionsAreFoundByKind) {
  using runtime::parse_model_file;
  std::string params(64, '\x01');
  runtime::ModelFile m =
      parse_model_file(model_bytes(3, {{"ACCL", "IMG"}, {"KLIB", "ELF"}, {"PARM", params}, {"GRPH", "{}"}}), "o.loom");
  EXPECT_EQ(m.graph_json, "{}");
  EXPECT_EQ(m.library, "ELF");
  EXPECT_EQ(m.accel_image, "IMG");
  EXPECT_EQ(m.params_bytes, 64u);
  m = parse_model_file(model_bytes(2, {{"", "{}"}, {"", params}, {"", "ELF"}, {"", "IMG"}}), "v2.loom");
  EXPECT_EQ(m.accel_image, "IMG");
  EXPECT_EQ(m.library, "ELF");
  struct Case {
    std::string bytes, expect;
  };
  std::vector<Case> cases = {
      {model_bytes(4, {{"GRPH", "{}"}, {"PARM", params}, {"KLIB", "ELF"}}),
       "n.loom: compiled model format version 4 was written by a newer Loom; this runtime reads versions 1 to 3"},
      {model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}, {"KLIB", "ELF"}, {"DBG\x01", "x"}}),
       "n.loom: section 3 has unknown kind 'DBG\\x01'"},
      {model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}, {"GRPH", "{}"}}),
       "n.loom: compiled model has two sections of kind 'GRPH' (the graph)"},
      {model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}}),
       "n.loom: compiled model has no section of kind 'KLIB' (the kernel library)"},
      {model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}, {"KLIB", "ELF"}, {"ACCL", ""}}),
       "n.loom: compiled model has an empty accelerator image"},
      {model_bytes(3, {{"GRPH", "{}"}, {"PARM", params}, {"KLIB", "ELF"}}).substr(0, 24),
       "n.loom: truncated compiled model (while reading section 0's kind)"},
      {model_bytes(0, {}), "n.loom: compiled model format version 0, this runtime reads versions 1 to 3"},
  };
  for (auto& c : cases) {
    std::string e = test::error_text<ModelError>([&] { parse_model_file(c.bytes, "n.loom"); });
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.expect << "\n" << e;
  }
}

}  // namespace
}  // namespace loom
