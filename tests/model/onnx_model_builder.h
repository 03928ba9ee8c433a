// ONNX models built in tests with ONNX's protobuf classes.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom::test {

// An ONNX model (IR version 7, default domain at `opset`) whose graph `graph` has one float input
// `input` of shape `dims` and nothing else yet.
inline onnx::ModelProto model_with_float_input(const std::string& graph, const std::string& input,
                                               const std::vector<int64_t>& dims, int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name(graph);
  auto* in = g->add_input();
  in->set_name(input);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return m;
}

// An int64 initializer `name` of shape `dims` (empty: a scalar) holding `values`.
inline void add_int64_initializer(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& values,
                                  const std::vector<int64_t>& dims) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}
// The same, 1-D.
inline void add_int64_initializer(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& values) {
  add_int64_initializer(g, name, values, {int64_t(values.size())});
}

}  // namespace loom::test
