// The accelerator's KernelBackend: a group is one accelerator operator (the accelerator
// partition's), scheduled by OpDef::schedule_accel and emitted as its own stream of the model's
// linked accelerator image (build_accel.h), which every value it reads or writes has a place in.
#include "build_accel.h"
#include "kernel_backend.h"

namespace loom::graph {

namespace {

class AccelBackend final : public KernelBackend {
 public:
  explicit AccelBackend(AccelBuild& image) : image_(image) {}
  runtime::KernelDevice device() const override { return runtime::KernelDevice::Accel; }

  std::string unsupported(const Graph& g, const FusedGroup& grp) const override {
    const OpDef& def = op_def(g.node(grp.anchor).op);
    if (def.device != runtime::KernelDevice::Accel)
      return "the accelerator runs the int8 layers its partition chose (accel_conv2d, accel_dense, accel_add), not '" +
             def.name + "'";
    return "";
  }

  KernelReport& compile(const Graph& g, const FusedGroup& grp, size_t k, runtime::KernelCall& call) override {
    call.func = "a" + std::to_string(k) + "_" + sanitize(g.node(grp.output).name);
    call.accel_stream = static_cast<int>(image_.compile_group(g, grp, call.func));
    reports_.push_back({call.func, group_ops(g, grp), 0, 0.0, runtime::KernelDevice::Accel});
    return reports_.back();
  }

  void write(runtime::ModelFile& file) override { file.accel_image = image_.finish().serialize(); }

 private:
  AccelBuild& image_;
};

}  // namespace

std::unique_ptr<KernelBackend> make_accel_backend(AccelBuild& image) { return std::make_unique<AccelBackend>(image); }

}  // namespace loom::graph
