// The typed executor graph (runtime/executor_graph.h): what to_json writes, from_json reads back
// field for field; version 1 graphs (no device field) still load; every inconsistency is a
// ModelError naming the origin and the offending value or kernel.
#include <gtest/gtest.h>

#include <functional>

#include "common/error_text.h"
#include "loom/runtime/error.h"
#include "loom/runtime/executor_graph.h"

namespace loom::runtime {
namespace {

// x (input) -> CPU kernel k0 (with parameter w) -> t0 -> accelerator stream 0 (with its own
// parameter a) -> t1 (output).
ExecutorGraph two_device_graph() {
  ExecutorGraph g;
  g.model = "m";
  g.target = "znver3";
  g.storages = {256, 128, 64};
  g.planned_bytes = 192;
  g.unplanned_bytes = 256;
  auto value = [](std::string name, std::vector<int64_t> shape, DataType dtype, ValueKind kind) {
    ExecutorValue v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.dtype = dtype;
    v.kind = kind;
    return v;
  };
  g.values.push_back(value("x", {4, 16}, DataType::Float(32), ValueKind::Input));
  g.values[0].storage = 0;
  g.values.push_back(value("w", {16}, DataType::Float(32), ValueKind::Param));
  g.values[1].param_offset = 64;
  g.values.push_back(value("t0", {4, 16}, DataType::Int(8), ValueKind::Temp));
  g.values[2].storage = 1;
  g.values[2].storage_offset = 64;  // the second half of its storage (an in-place concat's input)
  g.values[2].in_place_region = true;
  g.values[2].accel_offset = 0;
  g.values.push_back(value("a", {16, 16}, DataType::Int(8), ValueKind::AccelParam));
  g.values[3].accel_offset = 64;
  g.values.push_back(value("t1", {4, 16}, DataType::Int(8), ValueKind::Temp));
  g.values[4].storage = 2;
  g.values[4].accel_offset = 320;
  g.inputs = {0};
  g.outputs = {4};
  KernelCall cpu;
  cpu.node = "quantize";
  cpu.func = "k0_quantize";
  cpu.args = {0, 1, 2};
  KernelCall acc;
  acc.node = "dense";
  acc.func = "a1_dense";
  acc.device = KernelDevice::Accel;
  acc.args = {2, 3, 4};
  acc.accel_stream = 0;
  acc.upload = {2};
  acc.download = {4};
  g.kernels = {cpu, acc};
  return g;
}

void expect_same(const ExecutorGraph& a, const ExecutorGraph& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.storages, b.storages);
  EXPECT_EQ(a.planned_bytes, b.planned_bytes);
  EXPECT_EQ(a.unplanned_bytes, b.unplanned_bytes);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const ExecutorValue &x = a.values[i], &y = b.values[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.kind, y.kind) << x.name;
    EXPECT_EQ(x.storage, y.storage) << x.name;
    EXPECT_EQ(x.storage_offset, y.storage_offset) << x.name;
    EXPECT_EQ(x.param_offset, y.param_offset) << x.name;
    EXPECT_EQ(x.accel_offset, y.accel_offset) << x.name;
    EXPECT_EQ(x.in_place_region, y.in_place_region) << x.name;
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t k = 0; k < a.kernels.size(); ++k) {
    const KernelCall &x = a.kernels[k], &y = b.kernels[k];
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.func, y.func);
    EXPECT_EQ(x.device, y.device) << x.func;
    EXPECT_EQ(x.args, y.args) << x.func;
    EXPECT_EQ(x.accel_stream, y.accel_stream) << x.func;
    EXPECT_EQ(x.upload, y.upload) << x.func;
    EXPECT_EQ(x.download, y.download) << x.func;
  }
}

TEST(ExecutorGraph, JsonRoundTripKeepsEveryField) {
  ExecutorGraph g = two_device_graph();
  std::string json = g.to_json();
  EXPECT_NE(json.find("\"device\":\"accel\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"device\":\"cpu\""), std::string::npos) << json;
  ExecutorGraph back = ExecutorGraph::from_json(json, 128, "g");
  expect_same(g, back);
  EXPECT_EQ(back.storage_total(), 448u);
  EXPECT_EQ(back.values[3].nbytes(), 256u);
  EXPECT_EQ(back.to_json(), json);
}

// A version 1 graph has no device field: a kernel with an accel_stream runs on the accelerator.
TEST(ExecutorGraph, ReadsVersionOneGraphs) {
  std::string v1 = two_device_graph().to_json();
  auto erase_all = [&](const std::string& what) {
    for (size_t at; (at = v1.find(what)) != std::string::npos;) v1.erase(at, what.size());
  };
  erase_all("\"device\":\"accel\",");
  erase_all("\"device\":\"cpu\",");
  v1.replace(v1.find("\"version\":3"), 11, "\"version\":1");
  ExecutorGraph g = ExecutorGraph::from_json(v1, 128, "v1");
  ASSERT_EQ(g.kernels.size(), 2u);
  EXPECT_EQ(g.kernels[0].device, KernelDevice::CPU);
  EXPECT_EQ(g.kernels[1].device, KernelDevice::Accel);
  EXPECT_EQ(g.kernels[1].accel_stream, 0);
}

// A graph with CUDA kernels is version 4, and its kernels' copies come back; one without is
// version 3 (what older runtimes read).
TEST(ExecutorGraph, CudaKernelsListTheirCopiesFromVersion4) {
  ExecutorGraph g = two_device_graph();
  EXPECT_NE(g.to_json().find("\"version\":3"), std::string::npos);
  g.kernels[0].device = KernelDevice::Cuda;
  g.kernels[0].upload = {0};
  g.kernels[0].download = {2};
  std::string json = g.to_json();
  EXPECT_NE(json.find("\"version\":4"), std::string::npos);
  ExecutorGraph back = ExecutorGraph::from_json(json, 128, "g");
  EXPECT_EQ(back.kernels[0].device, KernelDevice::Cuda);
  EXPECT_EQ(back.kernels[0].upload, std::vector<int>{0});
  EXPECT_EQ(back.kernels[0].download, std::vector<int>{2});
  EXPECT_EQ(back.kernels[1].upload, std::vector<int>{2});
}

// Before version 4 every kernel of a GPU model was CUDA, and the runtime copied the inputs in
// before a run and the outputs out after it: the same copies come back as the kernels' lists.
TEST(ExecutorGraph, Version3GpuGraphsGetTheirWholeModelCopies) {
  ExecutorGraph g = two_device_graph();
  g.values[3].kind = ValueKind::Param;  // no accelerator: parameters live in the blob
  g.values[3].accel_offset = -1;
  g.values[3].param_offset = 0;
  g.values[3].shape = {16};
  g.values[2].accel_offset = g.values[4].accel_offset = -1;
  for (KernelCall& k : g.kernels) {
    k.device = KernelDevice::Cuda;
    k.accel_stream = -1;
    k.upload.clear();
    k.download.clear();
  }
  g.kernels[1].args = {0, 3, 4};  // reads the input too: copied once, before the first reader
  std::string json = g.to_json();
  json.replace(json.find("\"version\":4"), 11, "\"version\":3");
  for (const std::string copies : {"\"download\":[],", ",\"upload\":[]"})
    for (size_t at; (at = json.find(copies)) != std::string::npos;) json.erase(at, copies.size());
  ExecutorGraph back = ExecutorGraph::from_json(json, 128, "g");
  EXPECT_EQ(back.kernels[0].upload, std::vector<int>{0});
  EXPECT_TRUE(back.kernels[0].download.empty());
  EXPECT_TRUE(back.kernels[1].upload.empty());
  EXPECT_EQ(back.kernels[1].download, std::vector<int>{4});
  // An output no kernel writes (an in-place concat's) comes back after the last kernel.
  auto swap = [](std::string text, const std::string& from, const std::string& to) {
    return text.replace(text.find(from), from.size(), to);
  };
  std::string other = swap(swap(json, "\"outputs\":[4]", "\"outputs\":[2]"), "\"args\":[0,1,2]", "\"args\":[0,1,4]");
  back = ExecutorGraph::from_json(other, 128, "g");
  EXPECT_EQ(back.kernels[1].download, std::vector<int>{2});
  // Before version 4 a graph did not mix CUDA with other devices.
  std::string mixed = swap(json, "\"device\":\"cuda\"", "\"device\":\"cpu\"");
  std::string msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(mixed, 128, "g"); });
  EXPECT_NE(msg.find("g: executor graphs before version 4 run CUDA kernels alone; this one mixes them with other "
                     "devices"),
            std::string::npos)
      << msg;
}

TEST(ExecutorGraph, InconsistentGraphsNameWhatIsWrong) {
  struct Case {
    const char* name;
    std::function<void(ExecutorGraph&)> change;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"newer", nullptr, "g: executor graph version 6 was written by a newer Loom; this runtime reads versions 1 to 5"},
      {"accelerator kernel without a stream", [](ExecutorGraph& g) { g.kernels[1].accel_stream = -1; },
       "g: accelerator kernel 'a1_dense' (node 'dense') names no accel_stream"},
      {"kernel without arguments", [](ExecutorGraph& g) { g.kernels[0].args.clear(); },
       "g: kernel 'k0_quantize' (node 'quantize') has no arguments"},
      {"download of a parameter", [](ExecutorGraph& g) { g.kernels[1].download = {1}; },
       "g: kernel 'a1_dense' (node 'dense') downloads param 'w': only inputs and temporaries are written"},
      {"argument out of range", [](ExecutorGraph& g) { g.kernels[1].args[0] = 5; },
       "g: a kernel argument refers to value 5 of 5"},
      {"output out of range", [](ExecutorGraph& g) { g.outputs = {-1}; }, "g: an output refers to value -1 of 5"},
      {"value beyond its storage", [](ExecutorGraph& g) { g.values[0].storage = 2; },
       "g: value 'x' does not fit its storage 2"},
      {"value past its storage at its offset", [](ExecutorGraph& g) { g.values[2].storage_offset = 128; },
       "g: value 't0' does not fit its storage 1 at offset 128"},
      {"value at an unaligned offset", [](ExecutorGraph& g) { g.values[2].storage_offset = 32; },
       "g: value 't0' lies at storage offset 32, not a multiple of 64"},
      {"parameter beyond the blob", [](ExecutorGraph& g) { g.values[1].param_offset = 128; },
       "g: parameter 'w' lies outside the parameter blob"},
      {"accelerator parameter without a place", [](ExecutorGraph& g) { g.values[3].accel_offset = -1; },
       "g: accelerator parameter 'a' has no accel_offset"},
      {"an input in an in-place region", [](ExecutorGraph& g) { g.values[0].in_place_region = true; },
       "g: input 'x' is marked in_place_region: only temporaries are"},
      {"a parameter in an in-place region", [](ExecutorGraph& g) { g.values[1].in_place_region = true; },
       "g: param 'w' is marked in_place_region: only temporaries are"},
  };
  for (auto& c : cases) {
    ExecutorGraph g = two_device_graph();
    std::string json;
    if (c.change) {
      c.change(g);
      json = g.to_json();
    } else {
      json = g.to_json();
      json.replace(json.find("\"version\":3"), 11, "\"version\":6");
    }
    std::string msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
  }
  // to_json writes no copies for a CPU kernel; a file may still have them.
  std::string json = two_device_graph().to_json();
  json.replace(json.find("\"device\":\"cpu\""), 14, "\"device\":\"cpu\",\"upload\":[0]");
  std::string msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
  EXPECT_NE(msg.find("g: CPU kernel 'k0_quantize' (node 'quantize') copies values (upload, download): the CPU reads "
                     "the host's copies"),
            std::string::npos)
      << msg;
  // A CUDA kernel copies values from version 4 on, and names no accelerator stream.
  json = two_device_graph().to_json();
  json.replace(json.find("\"device\":\"cpu\""), 14, "\"device\":\"cuda\",\"download\":[0]");
  msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
  EXPECT_NE(msg.find("g: CUDA kernel 'k0_quantize' (node 'quantize') copies values (upload, download), which "
                     "executor graphs before version 4 do not"),
            std::string::npos)
      << msg;
  json = two_device_graph().to_json();
  json.replace(json.find("\"device\":\"cpu\""), 14, "\"device\":\"cuda\",\"accel_stream\":0");
  msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
  EXPECT_NE(msg.find("g: cuda kernel 'k0_quantize' (node 'quantize') names an accel_stream"), std::string::npos) << msg;
  json = two_device_graph().to_json();
  json.replace(json.find("\"device\":\"accel\""), 16, "\"device\":\"tpu\"");
  msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
  EXPECT_NE(msg.find("g: kernel 'a1_dense' has unknown device 'tpu' (expected one of cpu, accel, cuda)"),
            std::string::npos)
      << msg;
  json = two_device_graph().to_json();
  json.replace(json.find("\"kind\":\"param\""), 14, "\"kind\":\"weird\"");
  msg = test::error_text<ModelError>([&] { ExecutorGraph::from_json(json, 128, "g"); });
  EXPECT_NE(msg.find("g: value 'w' has unknown kind 'weird' (expected one of input, temp, param, accel_param)"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace loom::runtime
