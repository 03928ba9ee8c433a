// The runtime's graph executor on a compiled model (the MLP exported by PyTorch, compiled by the
// `models_compile_mlp` fixture). This binary links loom_runtime only: running a compiled model
// needs no compiler library. Also: malformed compiled-model files and wrong inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/error_text.h"
#include "common/temp_dir.h"
#include "loom/runtime/error.h"
#include "loom/runtime/executor_graph.h"
#include "loom/runtime/graph_executor.h"
#include "loom/runtime/npy.h"

namespace loom::runtime {
namespace {

const std::string kDir = LOOM_MODELS_DIR;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(GraphExecutor, RunsTheCompiledMlpLikePyTorch) {
  auto ex = GraphExecutor::load(kDir + "/mlp.loom");
  ASSERT_EQ(ex.num_inputs(), 1u);
  ASSERT_EQ(ex.num_outputs(), 1u);
  NDArray x = read_npy(kDir + "/mlp.input0.npy"), want = read_npy(kDir + "/mlp.output0.npy");
  EXPECT_EQ(ex.input_spec(0).shape, x.shape());
  NDArray got = ex.run({x})[0];
  ASSERT_EQ(got.shape(), want.shape());
  double scale = 0, err = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, std::fabs(want.get_as_double(i)));
    err = std::max(err, std::fabs(want.get_as_double(i) - got.get_as_double(i)));
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LE(err, 1e-4 * scale);
  EXPECT_FALSE(ex.kernels().empty());
  EXPECT_LE(ex.planned_bytes(), ex.unplanned_bytes());
  // Runs are repeatable, and profiling gives one time per kernel.
  EXPECT_EQ(ex.run_profiled().size(), ex.kernels().size());
  NDArray again = ex.get_output(0);
  EXPECT_EQ(std::memcmp(again.raw_data(), got.raw_data(), got.nbytes()), 0);
}

TEST(GraphExecutor, RejectsWrongInputs) {
  auto ex = GraphExecutor::load(kDir + "/mlp.loom");
  std::vector<int64_t> shape = ex.input_spec(0).shape;
  std::vector<int64_t> wrong = shape;
  wrong[0] += 1;
  std::string msg = test::error_text<ShapeError>([&] { ex.set_input(0, NDArray::zeros(wrong, DataType::Float(32))); });
  EXPECT_NE(msg.find("input '" + ex.input_spec(0).name + "' expects float32"), std::string::npos) << msg;
  msg = test::error_text<TypeError>([&] { ex.set_input(0, NDArray::zeros(shape, DataType::Int(32))); });
  EXPECT_NE(msg.find("got int32"), std::string::npos) << msg;
  msg = test::error_text<RuntimeError>(
      [&] { ex.set_input("no_such_input", NDArray::zeros(shape, DataType::Float(32))); });
  EXPECT_NE(msg.find("no input 'no_such_input'"), std::string::npos) << msg;
  msg = test::error_text<RuntimeError>([&] { ex.run({}); });
  EXPECT_NE(msg.find("takes 1 inputs, got 0"), std::string::npos) << msg;
}

TEST(GraphExecutor, RejectsMalformedModelFiles) {
  test::TestDir dir;
  std::string good = read_bytes(kDir + "/mlp.loom");
  ASSERT_GT(good.size(), 100u);
  struct Case {
    const char* name;
    std::string bytes;
    const char* expect;
  };
  std::string other_version = good;
  other_version[8] = 99;
  std::string corrupted = good;
  corrupted[good.size() / 2] ^= 0x5a;
  std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 3), "truncated compiled model"},
      {"header only", good.substr(0, 12), "truncated"},
      {"garbage", "hello, I am not a model at all", "bad magic"},
      {"empty", "", "bad magic"},
      {"other version", other_version, "format version 99"},
      {"corrupted", corrupted, "corrupted"},
      {"trailing bytes", good + "xx", ""},
  };
  for (auto& c : cases) {
    std::string path = dir.file("bad.loom");
    write_bytes(path, c.bytes);
    std::string msg = test::error_text<ModelError>([&] { GraphExecutor::load(path); });
    EXPECT_NE(msg, "<no error>") << c.name;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << c.name << ": " << msg;
  }
  std::string msg = test::error_text<RuntimeError>([&] { GraphExecutor::load(dir.file("missing.loom")); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

// Host memory is bounded before anything is allocated: the limit names its flag, and absurd
// storage sizes or counts in a (corrupt or hostile) executor graph are refused.
TEST(GraphExecutor, HostMemoryIsCheckedBeforeAllocating) {
  ModelFile f = load_model_file(kDir + "/mlp.loom");
  ExecutorOptions small;
  small.max_host_bytes = 64;
  std::string msg = test::error_text<ModelError>([&] { GraphExecutor::from_model_file(f, "'mlp.loom'", small); });
  EXPECT_NE(msg.find("'mlp.loom': the model's activation buffers need "), std::string::npos) << msg;
  EXPECT_NE(msg.find("more than the limit of 64 (ExecutorOptions::max_host_bytes; loom run --max-host-memory)"),
            std::string::npos)
      << msg;
  EXPECT_NO_THROW(GraphExecutor::from_model_file(f, "'mlp.loom'"));
  size_t at = f.graph_json.find("\"storages\":");
  ASSERT_NE(at, std::string::npos) << f.graph_json.substr(0, 200);
  at = f.graph_json.find('[', at) + 1;
  ModelFile huge = f;
  huge.graph_json.insert(at, "1099511627777,");
  msg = test::error_text<ModelError>([&] { GraphExecutor::from_model_file(huge, "'mlp.loom'"); });
  EXPECT_NE(msg.find("storage of 1099511627777 bytes is implausibly large"), std::string::npos) << msg;
  ModelFile many = f;  // 40 storages of 1 TB each pass the per-buffer check but not the total
  std::string tb;
  for (int i = 0; i < 40; ++i) tb += "1099511627776,";
  many.graph_json.insert(at, tb);
  msg = test::error_text<ModelError>([&] { GraphExecutor::from_model_file(many, "'mlp.loom'"); });
  EXPECT_NE(msg.find("bytes of host memory, more than the limit of"), std::string::npos) << msg;
}

// Found by fuzz_executor_graph: a float where an integer belongs (nlohmann's get<uint64_t> cast
// 1.4e101 with undefined behaviour) and a dtype whose digits std::stoi threw on.
TEST(GraphExecutor, MalformedNumbersInTheGraphAreModelErrors) {
  ModelFile f = load_model_file(kDir + "/mlp.loom");
  size_t at = f.graph_json.find("\"storages\":");
  ASSERT_NE(at, std::string::npos);
  ModelFile big = f;
  big.graph_json.insert(f.graph_json.find('[', at) + 1, "1.4e101,");
  std::string msg = test::error_text<ModelError>([&] { GraphExecutor::from_model_file(big, "'m.loom'"); });
  EXPECT_NE(msg.find("'m.loom': malformed executor graph: a storage size must be an integer in range, got 1.4e+101"),
            std::string::npos)
      << msg;
  ModelFile dtype = f;
  size_t d = dtype.graph_json.find("\"float32\"");
  ASSERT_NE(d, std::string::npos);
  dtype.graph_json.replace(d, 9, "\"float32x\"");
  msg = test::error_text<ModelError>([&] { GraphExecutor::from_model_file(dtype, "'m.loom'"); });
  EXPECT_NE(msg.find("cannot parse data type 'float32x'"), std::string::npos) << msg;
}

// Every kernel call is checked against the function it calls when the model loads: a function the
// library lacks, another argument count, an argument of another shape.
TEST(GraphExecutor, CallsThatDoNotMatchTheirKernelAreModelErrors) {
  ModelFile f = load_model_file(kDir + "/mlp.loom");
  auto with = [&](const std::function<void(ExecutorGraph&)>& change) {
    ExecutorGraph g = ExecutorGraph::from_json(f.graph_json, f.params_bytes, "m");
    change(g);
    ModelFile m = f;
    m.graph_json = g.to_json();
    return test::error_text<ModelError>([&] { GraphExecutor::from_model_file(m, "'m.loom'"); });
  };
  std::string msg = with([](ExecutorGraph& g) { g.kernels[0].func = "k99_nothing"; });
  EXPECT_NE(msg.find("'m.loom': kernel 'k99_nothing' (node '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("') is missing from the kernel library"), std::string::npos) << msg;
  std::string func;
  msg = with([&](ExecutorGraph& g) {
    func = g.kernels[0].func;
    g.kernels[0].args.erase(g.kernels[0].args.begin());
  });
  EXPECT_NE(msg.find("'m.loom': kernel '" + func + "' takes "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" arguments, the graph passes "), std::string::npos) << msg;
  msg = with([](ExecutorGraph& g) { g.kernels[0].args[0] = g.kernels.back().args.back(); });
  EXPECT_NE(msg.find("' argument 0 expects "), std::string::npos) << msg;
  EXPECT_NE(msg.find(", the graph passes '"), std::string::npos) << msg;
}

TEST(Npy, RoundTripAndErrors) {
  test::TestDir dir;
  NDArray a = NDArray::empty({2, 3}, DataType::Float(32));
  a.fill_random(7);
  write_npy(dir.file("a.npy"), a);
  NDArray b = read_npy(dir.file("a.npy"));
  ASSERT_EQ(b.shape(), a.shape());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
  std::string bytes = read_bytes(dir.file("a.npy"));
  write_bytes(dir.file("cut.npy"), bytes.substr(0, bytes.size() - 4));
  std::string msg = test::error_text<RuntimeError>([&] { read_npy(dir.file("cut.npy")); });
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  write_bytes(dir.file("f.npy"), fortran);
  msg = test::error_text<RuntimeError>([&] { read_npy(dir.file("f.npy")); });
  EXPECT_NE(msg.find("Fortran"), std::string::npos) << msg;
  std::string complex = bytes;
  complex.replace(complex.find("<f4"), 3, "<c8");
  write_bytes(dir.file("c.npy"), complex);
  msg = test::error_text<RuntimeError>([&] { read_npy(dir.file("c.npy")); });
  EXPECT_NE(msg.find("unsupported .npy dtype '<c8'"), std::string::npos) << msg;
  write_bytes(dir.file("g.npy"), "not numpy");
  msg = test::error_text<RuntimeError>([&] { read_npy(dir.file("g.npy")); });
  EXPECT_NE(msg.find("bad magic"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::runtime

namespace loom {
namespace {

// This program links only the runtime: no accelerator backend is registered, and asking for one
// says how a program registers the simulators (explicitly, not through static initializers that
// --as-needed linking drops).
TEST(AccelBackends, UnregisteredBackendSaysHowToRegister) {
  std::string msg = test::error_text<DeviceError>([] { make_accel_device("fsim", ""); });
  EXPECT_NE(msg.find("no accelerator backend named 'fsim' (available: none)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loom::sim::register_backends()"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Found by fuzz_model_file: a section length read from the bytes just before the trailing hash
// left the read position past the end of the sections, the bounds check underflowed, and the
// parser tried to allocate ~350 TB. It is a truncated file.
TEST(ModelFileFuzzRegressions, LengthReadIntoTheHashIsTruncation) {
  std::string bytes("LOOMMODL\x01\x00\x00\x00\x03\x00\x00\x00OMMODL\x01\x00\x00\x00\x03\x00\x00", 29);
  std::string msg = test::error_text<ModelError>([&] { runtime::parse_model_file(bytes, "fuzz.loom"); });
  EXPECT_NE(msg.find("fuzz.loom: truncated compiled model"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom
