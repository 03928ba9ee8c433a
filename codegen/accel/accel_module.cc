#include "accel_emitter.h"
#include "loom/codegen/accel.h"
#include "loom/ir/functor.h"
#include "loom/ir/printer.h"

namespace loom::codegen {

using namespace loom::ir;

namespace {

runtime::FunctionSignature signature_for(const LoweredFunc& f) {
  runtime::FunctionSignature sig{f.name, {}};
  for (auto& b : f.args) {
    runtime::ArgSpec a{b->name, {}, b->dtype};
    for (auto& e : b->shape) {
      auto* c = as_const_int(e);
      if (!c) LOOM_THROW(CodegenError, "accelerator backend, function '", f.name, "': argument '", b->name, "' has a non-constant shape");
      a.shape.push_back(*c);
    }
    sig.args.push_back(a);
  }
  return sig;
}

void check_args(const runtime::FunctionSignature& sig, const std::vector<NDArray>& args) {
  if (args.size() != sig.args.size())
    LOOM_THROW(ShapeError, sig.name, ": expects ", sig.args.size(), " arguments, got ", args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& want = sig.args[i];
    if (args[i].dtype() != want.dtype)
      LOOM_THROW(TypeError, sig.name, ": argument '", want.name, "' expects ", want.str(), ", got ", args[i].describe());
    if (args[i].shape() != want.shape)
      LOOM_THROW(ShapeError, sig.name, ": argument '", want.name, "' expects ", want.str(), ", got ", args[i].describe());
  }
}

struct Session {
  accel::Driver drv;
  std::vector<accel::DeviceBuffer> bufs;
  Session(AccelDevice& dev, const accel::AccelConfig& cfg) : drv(dev, cfg) {}
  ~Session() {
    for (auto& b : bufs) drv.free(b);
  }
};

}  // namespace

AccelModule::AccelModule(LoweredFunc func, accel::AccelConfig config)
    : func_(std::move(func)), config_(std::move(config)), sig_(signature_for(func_)) {}

AccelModule build_accel(const LoweredFunc& func, const accel::AccelConfig& config) {
  config.validate();
  // Constructs the backend cannot run are reported now, not half-way through a run.
  class Check : public IRVisitor {
   public:
    explicit Check(const std::string& n) : name(n) {}
    std::string name;
    void visit_for(const ForNode* op) override {
      if (op->for_kind == ForKind::Parallel || op->for_kind == ForKind::ThreadBinding)
        LOOM_THROW(CodegenError, "accelerator backend, function '", name, "': loop '", op->var.name(), "' is ", to_string(op->for_kind),
                   "; accelerator host loops must be serial, unrolled or virtual threads");
      IRVisitor::visit_for(op);
    }
    void visit_allocate(const AllocateNode* op) override {
      const std::string& s = op->buffer->scope;
      if (s != scope::kAccInput && s != scope::kAccWeight && s != scope::kAccAccum)
        LOOM_THROW(CodegenError, "accelerator backend, function '", name, "': allocation '", op->buffer->name, "' in scope '", s,
                   "' (only acc.inp, acc.wgt, acc.acc); run host stages with the CPU backend");
      IRVisitor::visit_allocate(op);
    }
  } check(func.name);
  check.visit(func.body);
  return AccelModule(func, config);
}

AccelRunStats AccelModule::run(AccelDevice& device, const std::vector<NDArray>& args) const {
  check_args(sig_, args);
  Session s(device, config_);
  std::map<const BufferNode*, accel::DeviceBuffer> dram;
  for (size_t i = 0; i < args.size(); ++i) {
    s.bufs.push_back(s.drv.alloc(args[i].nbytes()));
    s.drv.copy_to_device(s.bufs.back(), args[i].raw_data(), args[i].nbytes());
    dram[func_.args[i].get()] = s.bufs.back();
  }
  accel_backend::Emitter(s.drv, dram, func_.name).run(func_.body);
  AccelRunStats stats;
  stats.instructions = s.drv.stream().size() + 1;
  stats.counters = s.drv.synchronize();
  stats.cycles = device.cycles();
  for (size_t i = 0; i < args.size(); ++i) s.drv.copy_from_device(s.bufs[i], args[i].raw_data(), args[i].nbytes());
  return stats;
}

std::string AccelModule::disassemble(AccelDevice& device) const {
  Session s(device, config_);
  std::map<const BufferNode*, accel::DeviceBuffer> dram;
  for (size_t i = 0; i < sig_.args.size(); ++i) {
    int64_t n = 1;
    for (auto d : sig_.args[i].shape) n *= d;
    s.bufs.push_back(s.drv.alloc(uint64_t(n) * sig_.args[i].dtype.bytes()));
    dram[func_.args[i].get()] = s.bufs.back();
  }
  accel_backend::Emitter(s.drv, dram, func_.name).run(func_.body);
  return accel::disassemble(s.drv.stream());
}

}  // namespace loom::codegen
