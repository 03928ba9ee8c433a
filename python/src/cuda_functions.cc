// Functions built for GPUs from Python: loom.build(s, args, target='cuda') lowers with the GPU's
// passes, emits CUDA C and compiles it with NVRTC (codegen/cuda.h; no GPU needed to compile), and
// returns a loom.CudaFunction: its source, PTX and kernels' launch plans, and a call that loads it
// on the GPU (runtime/cuda.h) and runs it on numpy arrays and CPU tensors, copied to the GPU and
// back. Calling it where there is no GPU is a loom.DeviceError saying what is missing.
#include <pybind11/stl.h>

#include "loom/codegen/cuda.h"
#include "loom/runtime/cuda.h"
#include "te.h"

namespace loom::python {

namespace {

class CudaFunction {
 public:
  CudaFunction(runtime::CudaProgram program, std::vector<bool> is_output)
      : program_(std::move(program)), is_output_(std::move(is_output)) {}
  const runtime::CudaProgram& program() const { return program_; }
  const runtime::CudaFunction& function() const { return program_.functions.at(0); }

  py::object call(const py::args& args) {
    const runtime::CudaFunction& fn = function();
    CopiedCall call(fn.name, fn.args, is_output_, args);
    {
      py::gil_scoped_release released;
      if (!module_.defined()) module_ = runtime::CudaModule::load(program_);  // DeviceError: no driver or GPU
      std::vector<NDArray>& host = call.arrays();
      std::vector<NDArray> dev(host.size());
      for (size_t i = 0; i < host.size(); ++i) dev[i] = host[i].to_device(runtime::cuda_device());
      module_.call(fn.name, dev);
      for (size_t i = 0; i < host.size(); ++i)
        if (is_output_[i]) host[i] = dev[i].to_device(DLDevice{kDLCPU, 0});
    }
    return call.finish();
  }

 private:
  runtime::CudaProgram program_;
  std::vector<bool> is_output_;
  runtime::CudaModule module_;
};

}  // namespace

py::object build_cuda_function(const Lowered& lowered, const std::string& arch) {
  if (lowered.target != "cuda")
    LOOM_THROW(ConfigError, "build: '", lowered.func.name, "' was lowered for ", lowered.target,
               "; lower it with target='cuda' (its GPU passes) or pass the schedule");
  codegen::cuda::CudaOptions o;
  o.arch = arch;
  runtime::CudaProgram p;
  {
    py::gil_scoped_release released;
    p = codegen::cuda::build({lowered.func}, o);  // CodegenError when NVRTC is missing or rejects the source
  }
  return py::cast(CudaFunction(std::move(p), lowered.is_output));
}

void register_cuda_functions(py::module_& m) {
  py::class_<CudaFunction>(m, "CudaFunction", "A function compiled for GPUs: call it on arrays where there is one.")
      .def("__call__", &CudaFunction::call,
           "f(*arrays): inputs then outputs (written), or the inputs alone (outputs returned); the arrays\n"
           "are copied to the GPU and the outputs back. loom.DeviceError where there is no GPU.")
      .def_property_readonly("name", [](const CudaFunction& f) { return f.function().name; })
      .def_property_readonly("arch", [](const CudaFunction& f) { return f.program().arch; })
      .def_property_readonly(
          "source", [](const CudaFunction& f) { return f.program().source; }, "The CUDA C.")
      .def_property_readonly("ptx", [](const CudaFunction& f) { return f.program().ptx; })
      .def_property_readonly("compile_log", [](const CudaFunction& f) { return f.program().compile_log; })
      .def_property_readonly("args",
                             [](const CudaFunction& f) {
                               py::list out;
                               for (const auto& a : f.function().args) out.append(arg_spec_record(a));
                               return out;
                             })
      .def_property_readonly(
          "kernels",
          [](const CudaFunction& f) {
            py::list out;
            for (const runtime::CudaKernelSpec& k : f.function().kernels) {
              py::dict d;
              d["name"] = k.name;
              d["grid"] = std::vector<uint32_t>(k.grid.begin(), k.grid.end());
              d["block"] = std::vector<uint32_t>(k.block.begin(), k.block.end());
              d["shared_bytes"] = k.shared_bytes;
              d["registers"] = k.registers;
              out.append(d);
            }
            return out;
          },
          "Its kernels in launch order: {'name', 'grid', 'block', 'shared_bytes', 'registers'}.");
  m.def(
      "cuda_available",
      [] {
        std::string why;
        bool ok = runtime::cuda_available(&why);
        return py::make_tuple(ok, why);
      },
      "cuda_available() -> (bool, why): whether a GPU is here, and what is missing when not.");
}

}  // namespace loom::python
