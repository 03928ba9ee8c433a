#include "loom/graph/builtin_models.h"

#include <cmath>

#include "loom/graph/op_registry.h"
#include "loom/runtime/error.h"

namespace loom::graph {

namespace {

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  int param(const std::string& name, Shape shape, double lo, double hi) {
    NDArray a = NDArray::empty(shape, DataType::Float(32));
    a.fill_random(++seed_, lo, hi);
    return g_.add_constant(g_.unique_name(name), a);
  }
  // conv (no bias) + batch_norm (+ relu / relu6). `gamma` scales the block's output.
  int conv_bn(int x, const std::string& name, int64_t out, int64_t k, int64_t stride, int64_t groups,
              const std::string& act, double gamma = 1.0) {
    int64_t in = g_.type_of(x).shape[1];
    double bound = std::sqrt(6.0 / static_cast<double>(in / groups * k * k));
    int w = param(name + ".weight", {out, in / groups, k, k}, -bound, bound);
    int64_t p = k / 2;
    int y = op("conv2d", name, {x, w},
               Attrs()
                   .set("strides", std::vector<int64_t>{stride, stride})
                   .set("pads", std::vector<int64_t>{p, p, p, p})
                   .set("groups", groups));
    y = op("batch_norm", name + ".bn",
           {y, param(name + ".bn.gamma", {out}, 0.8 * gamma, 1.2 * gamma), param(name + ".bn.beta", {out}, -0.1, 0.1),
            param(name + ".bn.mean", {out}, -0.1, 0.1), param(name + ".bn.var", {out}, 0.8, 1.2)},
           Attrs().set("epsilon", 1e-5));
    if (act == "relu") y = op("relu", name + ".relu", {y});
    if (act == "relu6") y = op("clip", name + ".relu6", {y}, Attrs().set("min", 0.0).set("max", 6.0));
    return y;
  }
  int op(const std::string& kind, const std::string& name, std::vector<int> in, Attrs a = {}) {
    int id = g_.add_op(kind, g_.unique_name(name), std::move(in), std::move(a));
    infer_one(id);
    return id;
  }
  int classifier(int x, int64_t classes) {
    x = op("global_avg_pool2d", "avgpool", {x});
    const Shape& s = g_.type_of(x).shape;
    x = op("reshape", "flatten", {x}, Attrs().set("shape", Shape{s[0], s[1]}));
    return dense(x, "fc", classes);
  }
  int dense(int x, const std::string& name, int64_t out) {
    int64_t in = g_.type_of(x).shape[1];
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    return op("dense", name,
              {x, param(name + ".weight", {out, in}, -bound, bound), param(name + ".bias", {out}, -bound, bound)});
  }

 private:
  void infer_one(int id);
  Graph& g_;
  uint64_t seed_ = 0;
};

void Builder::infer_one(int id) {
  Node& n = g_.node(id);
  std::vector<TensorType> in;
  for (int i : n.inputs) in.push_back(g_.type_of(i));
  n.type = op_def(n.op).infer_checked(n, in);
  n.typed = true;
}

Graph resnet(int depth, int64_t batch, int64_t image) {
  Graph g;
  g.name = "resnet" + std::to_string(depth);
  Builder b(g);
  int x = g.add_input("input", {{batch, 3, image, image}, DataType::Float(32)});
  x = b.conv_bn(x, "conv1", 64, 7, 2, 1, "relu");
  x = b.op("max_pool2d", "maxpool", {x},
           Attrs()
               .set("kernel", std::vector<int64_t>{3, 3})
               .set("strides", std::vector<int64_t>{2, 2})
               .set("pads", std::vector<int64_t>{1, 1, 1, 1}));
  bool bottleneck = depth >= 50;
  std::vector<int> blocks = depth == 18 ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
  int64_t expansion = bottleneck ? 4 : 1;
  for (int stage = 0; stage < 4; ++stage) {
    int64_t width = 64 << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      int64_t in_ch = g.type_of(x).shape[1];
      int shortcut = x;
      if (stride != 1 || in_ch != width * expansion)
        shortcut = b.conv_bn(x, name + ".downsample", width * expansion, 1, stride, 1, "");
      int y;
      // The last BatchNorm of a residual branch starts small, as in zero-init-residual training,
      // so activations stay O(1) through the network.
      if (bottleneck) {
        y = b.conv_bn(x, name + ".conv1", width, 1, 1, 1, "relu");
        y = b.conv_bn(y, name + ".conv2", width, 3, stride, 1, "relu");
        y = b.conv_bn(y, name + ".conv3", width * 4, 1, 1, 1, "", 0.3);
      } else {
        y = b.conv_bn(x, name + ".conv1", width, 3, stride, 1, "relu");
        y = b.conv_bn(y, name + ".conv2", width, 3, 1, 1, "", 0.3);
      }
      y = b.op("add", name + ".add", {y, shortcut});
      x = b.op("relu", name + ".relu", {y});
    }
  }
  g.outputs = {b.classifier(x, 1000)};
  return g;
}

Graph mobilenet_v2(int64_t batch, int64_t image) {
  Graph g;
  g.name = "mobilenet_v2";
  Builder b(g);
  int x = g.add_input("input", {{batch, 3, image, image}, DataType::Float(32)});
  x = b.conv_bn(x, "features.0", 32, 3, 2, 1, "relu6");
  struct Cfg {
    int64_t t, c, n, s;
  };
  int block = 1;
  for (Cfg c : {Cfg{1, 16, 1, 1}, Cfg{6, 24, 2, 2}, Cfg{6, 32, 3, 2}, Cfg{6, 64, 4, 2}, Cfg{6, 96, 3, 1},
                Cfg{6, 160, 3, 2}, Cfg{6, 320, 1, 1}}) {
    for (int64_t i = 0; i < c.n; ++i, ++block) {
      std::string name = "features." + std::to_string(block);
      int64_t in_ch = g.type_of(x).shape[1], hidden = in_ch * c.t, stride = i == 0 ? c.s : 1;
      int y = x;
      if (c.t != 1) y = b.conv_bn(y, name + ".expand", hidden, 1, 1, 1, "relu6");
      y = b.conv_bn(y, name + ".depthwise", hidden, 3, stride, hidden, "relu6");
      y = b.conv_bn(y, name + ".project", c.c, 1, 1, 1, "", stride == 1 && in_ch == c.c ? 0.3 : 1.0);
      x = (stride == 1 && in_ch == c.c) ? b.op("add", name + ".add", {y, x}) : y;
    }
  }
  x = b.conv_bn(x, "features.18", 1280, 1, 1, 1, "relu6");
  g.outputs = {b.classifier(x, 1000)};
  return g;
}

Graph mlp(int64_t batch) {
  Graph g;
  g.name = "mlp";
  Builder b(g);
  int x = g.add_input("input", {{batch, 256}, DataType::Float(32)});
  x = b.op("relu", "relu1", {b.dense(x, "fc1", 512)});
  x = b.op("relu", "relu2", {b.dense(x, "fc2", 256)});
  g.outputs = {b.dense(x, "fc3", 10)};
  return g;
}

}  // namespace

std::vector<std::string> builtin_model_names() { return {"resnet18", "resnet50", "mobilenet_v2", "mlp"}; }

Graph builtin_model(const std::string& name, int64_t batch, int64_t image) {
  if (batch <= 0 || batch > 1024)
    LOOM_THROW(ModelError, "built-in model '", name, "': batch ", batch, " is out of range (1..1024)");
  if (image < 32 || image > 1024)
    LOOM_THROW(ModelError, "built-in model '", name, "': image size ", image, " is out of range (32..1024)");
  if (name == "resnet18") return resnet(18, batch, image);
  if (name == "resnet50") return resnet(50, batch, image);
  if (name == "mobilenet_v2") return mobilenet_v2(batch, image);
  if (name == "mlp") return mlp(batch);
  LOOM_THROW(ModelError, "no built-in model '", name, "' (built in: resnet18, resnet50, mobilenet_v2, mlp)");
}

}  // namespace loom::graph
