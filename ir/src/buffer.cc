#include "loom/ir/buffer.h"

namespace loom::ir {

Buffer make_buffer(std::string name, DataType dtype, std::vector<Expr> shape, std::string scope) {
  auto b = std::make_shared<BufferNode>();
  b->data = Var(name, DataType::UInt(64));
  b->name = std::move(name);
  b->dtype = dtype;
  b->shape = std::move(shape);
  b->scope = std::move(scope);
  return b;
}

int64_t constant_size(const Buffer& b) {
  int64_t n = 1;
  for (auto& e : b->shape) {
    auto* c = as_const_int(e);
    if (!c) return -1;
    n *= *c;
  }
  return n;
}

std::vector<Expr> row_major_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> strides(shape.size());
  Expr s = Expr(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    auto* a = as_const_int(s);
    auto* b = as_const_int(shape[i]);
    s = a && b ? Expr(static_cast<int>(*a * *b)) : s * shape[i];
  }
  return strides;
}

}  // namespace loom::ir
