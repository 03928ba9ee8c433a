// The width of each argument's elements in device memory, from what its DMA copies move: an
// argument loaded into acc.inp holds inp_bits elements, into acc.wgt wgt_bits, into acc.acc
// acc_bits, and one stored from acc.acc out_bits. Narrower than the argument's dtype means packed
// (accel/packing.h), so the linker, the model builder and AccelModule size, pack and unpack it.
#include <map>

#include "loom/codegen/accel.h"
#include "loom/ir/functor.h"
#include "loom/ir/intrinsics.h"
#include "loom/runtime/error.h"

namespace loom::codegen {

using namespace loom::ir;

namespace {

class ArgRoles : public IRVisitor {
 public:
  ArgRoles(const LoweredFunc& f, const accel::AccelConfig& c) : func_(f), c_(c) {
    for (size_t k = 0; k < f.args.size(); ++k) index_[f.args[k].get()] = k;
    bits_.assign(f.args.size(), 0);
    role_.assign(f.args.size(), "");
  }

  std::vector<int> run() {
    visit(func_.body);
    for (size_t k = 0; k < bits_.size(); ++k)
      if (bits_[k] == 0) bits_[k] = func_.args[k]->dtype.bits();
    return bits_;
  }

  void visit_call(const CallNode* call) override {
    if (auto copy = as_dma_copy(call)) {
      const LoadNode *dst = as_address_of(copy->dst), *src = as_address_of(copy->src);
      if (dst && src) {
        note(src->buffer.get(), dst->buffer->scope);                              // a load
        if (src->buffer->scope == scope::kAccAccum) note(dst->buffer.get(), "");  // a store
      }
    }
    IRVisitor::visit_call(call);
  }

 private:
  // `buffer` moves into the scratchpad of `scope` (empty: out of the accumulator, a store).
  void note(const BufferNode* buffer, const std::string& scope) {
    auto it = index_.find(buffer);
    if (it == index_.end()) return;
    int bits = 0;
    std::string role;
    if (scope == scope::kAccInput) {
      bits = c_.inp_bits, role = "inputs (" + std::to_string(bits) + "-bit)";
    } else if (scope == scope::kAccWeight) {
      bits = c_.wgt_bits, role = "weights (" + std::to_string(bits) + "-bit)";
    } else if (scope == scope::kAccAccum) {
      bits = c_.acc_bits, role = "accumulator loads (" + std::to_string(bits) + "-bit)";
    } else if (scope.empty()) {
      bits = c_.out_bits, role = "outputs (" + std::to_string(bits) + "-bit)";
    } else {
      return;
    }
    const size_t k = it->second;
    const int dtype_bits = buffer->dtype.bits();
    if (bits > dtype_bits)
      LOOM_THROW(CodegenError, "accelerator backend, function '", func_.name, "': argument '", buffer->name, "' is ",
                 buffer->dtype.str(), " but config '", c_.name, "' moves it as ", role);
    if (bits_[k] != 0 && bits_[k] != bits)
      LOOM_THROW(CodegenError, "accelerator backend, function '", func_.name, "': argument '", buffer->name,
                 "' is moved both as ", role_[k], " and as ", role, " by config '", c_.name,
                 "'; one argument has one width in device memory");
    bits_[k] = bits;
    role_[k] = role;
  }

  const LoweredFunc& func_;
  const accel::AccelConfig& c_;
  std::map<const BufferNode*, size_t> index_;
  std::vector<int> bits_;
  std::vector<std::string> role_;
};

}  // namespace

std::vector<int> accel_arg_bits(const LoweredFunc& func, const accel::AccelConfig& config) {
  return ArgRoles(func, config).run();
}

uint64_t accel_arg_bytes(const BufferNode& arg, int bits) {
  uint64_t n = 1;
  for (auto& e : arg.shape) {
    auto* c = as_const_int(e);
    if (!c) LOOM_THROW(CodegenError, "accelerator backend: argument '", arg.name, "' has a non-constant shape");
    n *= uint64_t(*c);
  }
  return (n * uint64_t(bits) + 7) / 8;
}

}  // namespace loom::codegen
