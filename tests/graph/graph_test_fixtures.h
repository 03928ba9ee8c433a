// Graphs that several graph-pass test files build: a residual block with its result computed by
// plain loops.
#pragma once
#include <algorithm>
#include <cmath>

#include "common/test_util.h"
#include "loom/graph/passes.h"

namespace loom::graph {

// x[1, C, H, W] -> conv3x3 pad 1 (C -> C) -> batch_norm -> relu -> + x -> relu.
struct ResidualBlock {
  Graph g;
  NDArray w, gamma, beta, mean, var;
  int64_t C = 16, H = 6, W = 7;
  ResidualBlock() {
    w = test::random_float32({C, C, 3, 3}, 1, -0.3, 0.3);
    gamma = test::random_float32({C}, 2, 0.5, 1.5);
    beta = test::random_float32({C}, 3);
    mean = test::random_float32({C}, 4, -0.2, 0.2);
    var = test::random_float32({C}, 5, 0.5, 1.5);
    int x = g.add_input("x", {{1, C, H, W}, DataType::Float(32)});
    int conv =
        g.add_op("conv2d", "conv", {x, g.add_constant("w", w)}, Attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1}));
    int bn = g.add_op("batch_norm", "bn",
                      {conv, g.add_constant("gamma", gamma), g.add_constant("beta", beta), g.add_constant("mean", mean),
                       g.add_constant("var", var)},
                      Attrs().set("epsilon", 1e-5));
    int relu = g.add_op("relu", "relu1", {bn});
    int add = g.add_op("add", "residual", {relu, x});
    g.outputs = {g.add_op("relu", "relu2", {add})};
  }
  // The same computation with plain loops (double precision).
  NDArray reference(const NDArray& x) const {
    NDArray y = NDArray::empty({1, C, H, W}, DataType::Float(32));
    for (int64_t o = 0; o < C; ++o)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t yy = i + ky - 1, xx = j + kx - 1;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                acc += x.get_as_double((c * H + yy) * W + xx) * w.get_as_double(((o * C + c) * 3 + ky) * 3 + kx);
              }
          double bn = (acc - mean.get_as_double(o)) / std::sqrt(var.get_as_double(o) + 1e-5) * gamma.get_as_double(o) +
                      beta.get_as_double(o);
          double r = std::max(bn, 0.0) + x.get_as_double((o * H + i) * W + j);
          y.set_from_double((o * H + i) * W + j, std::max(r, 0.0));
        }
    return y;
  }
};

}  // namespace loom::graph
