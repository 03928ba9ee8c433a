// Schedules, lowering and building from Python, with TVM's names: loom.create_schedule, s[T]'s
// primitives, loom.lower (the loop IR, printable) and loom.build (a function compiled by the LLVM
// backend, called on numpy arrays). A call passes each array's memory to the compiled function
// when it is C-contiguous, 64-byte aligned and of the argument's type and shape (loom.empty makes
// such arrays; CPU torch tensors are, read through DLPack); any other array is copied in (and
// an output copied back).
#include <pybind11/stl.h>

#include <sstream>

#include "bindings.h"
#include "loom/codegen/llvm.h"
#include "loom/ir/printer.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/schedule/lower.h"
#include "loom/schedule/schedule.h"
#include "loom/schedule/tensor_intrin.h"
#include "te.h"

namespace loom::python {

namespace {

using ir::Tensor;
using schedule::Schedule;
using schedule::Stage;

ir::IterVar iter_var(const py::handle& v, const std::string& what) {
  if (!py::isinstance<IterVarRef>(v))
    LOOM_THROW(TypeError, what, ": a ", type_name(v), " is not an iteration variable (T.op.axis, split's results)");
  return v.cast<IterVarRef>().iv;
}

std::vector<Tensor> tensors(const py::object& list, const std::string& what) {
  std::vector<Tensor> out;
  if (py::isinstance<Tensor>(list)) return {list.cast<Tensor>()};
  for (auto t : list) {
    if (!py::isinstance<Tensor>(t)) LOOM_THROW(TypeError, what, ": a ", type_name(t), " is not a te.Tensor");
    out.push_back(t.cast<Tensor>());
  }
  return out;
}

py::tuple refs(const std::vector<ir::IterVar>& ivs) {
  py::tuple out(ivs.size());
  for (size_t i = 0; i < ivs.size(); ++i) out[i] = py::cast(IterVarRef{ivs[i]});
  return out;
}

Lowered lower(const std::shared_ptr<Schedule>& s, const py::object& args, const std::string& name,
              const std::string& target) {
  if (target != "llvm" && target != "cpu" && target != "cuda" && target != "accel")
    LOOM_THROW(ConfigError, "lower: target '", target, "' is not one of llvm, cuda, accel");
  std::vector<Tensor> ts = tensors(args, "lower: args");
  Lowered l;
  for (const Tensor& t : ts) l.is_output.push_back(!t.op()->is_placeholder());
  schedule::LowerOptions o;
  o.target_gpu = target == "cuda";
  if (target == "llvm" || target == "cpu") o.vector_bits = codegen::target_info().vector_bits;
  l.func = schedule::lower(*s, ts, name, o);
  l.target = target;
  return l;
}

// The alignment compiled functions assume of their arguments (runtime/module.h's ABI).
constexpr uintptr_t kAlignment = 64;
constexpr size_t kMaxArgs = 64;
// Calls moving fewer bytes than this keep the GIL (their run is shorter than releasing it costs).
constexpr int64_t kReleaseGilBytes = 1 << 20;

void check_arg(const runtime::ArgSpec& spec, DataType dtype, const std::vector<int64_t>& shape,
               const std::string& what) {
  if (dtype != spec.dtype) LOOM_THROW(TypeError, what, " is ", dtype.str(), shape_str(shape), ", expects ", spec.str());
  if (shape != spec.shape) LOOM_THROW(ShapeError, what, " is ", shape_str(shape), ", expects ", spec.str());
}

// A tensor borrowed through the DLPack protocol (obj.__dlpack__()): the capsule is consumed (renamed
// "used_dltensor", as the protocol asks) and the producer's deleter runs when this is destroyed.
class DlpackTensor {
 public:
  DlpackTensor() = default;
  DlpackTensor(const py::object& obj, const std::string& what) {
    py::object cap = obj.attr("__dlpack__")();
    if (!PyCapsule_IsValid(cap.ptr(), "dltensor"))
      LOOM_THROW(TypeError, what, ": __dlpack__ returned no unused 'dltensor' capsule");
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    if (m->dl_tensor.device.device_type != kDLCPU)  // checked before the capsule is consumed: its owner frees it
      LOOM_THROW(DeviceError, what, " lives on another device (DLPack device type ",
                 int(m->dl_tensor.device.device_type), "); loom.build's functions run on the CPU");
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    managed_ = m;
  }
  DlpackTensor(DlpackTensor&& o) noexcept : managed_(o.managed_) { o.managed_ = nullptr; }
  DlpackTensor& operator=(DlpackTensor&& o) noexcept {
    std::swap(managed_, o.managed_);
    return *this;
  }
  ~DlpackTensor() {
    if (managed_ && managed_->deleter) managed_->deleter(managed_);
  }
  const DLTensor& tensor() const { return managed_->dl_tensor; }
  void* data() const { return static_cast<char*>(tensor().data) + tensor().byte_offset; }
  // Compact row-major and aligned: what a compiled function reads in place.
  bool in_place() const {
    const DLTensor& t = tensor();
    if (reinterpret_cast<uintptr_t>(data()) % kAlignment) return false;
    if (!t.strides) return true;
    int64_t expect = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != expect) return false;
      expect *= t.shape[d];
    }
    return true;
  }

 private:
  DLManagedTensor* managed_ = nullptr;
};

// A compiled function called on arrays.
class Function {
 public:
  Function(runtime::Module m, std::string name, std::vector<bool> is_output)
      : module_(std::move(m)), name_(std::move(name)), is_output_(std::move(is_output)) {
    sig_ = module_.signature(name_);
    fn_ = module_.get_function(name_);
    if (sig_.args.size() > kMaxArgs)
      LOOM_THROW(RuntimeError, name_, ": ", sig_.args.size(), " arguments; loom.build's functions take at most ",
                 kMaxArgs);
    for (bool o : is_output_) outputs_ += o;
    for (const runtime::ArgSpec& a : sig_.args) {
      kinds_.push_back(a.dtype.is_bool() ? 'b' : a.dtype.is_float() ? 'f' : a.dtype.is_int() ? 'i' : 'u');
      int64_t elements = 1;
      for (int64_t d : a.shape) elements *= d;
      nbytes_.push_back(elements * a.dtype.bytes());
    }
  }

  py::object call(const py::args& args) {
    const size_t n = sig_.args.size();
    const bool allocate = args.size() == n - outputs_ && outputs_ > 0;
    if (args.size() != n && !allocate)
      LOOM_THROW(TypeError, name_, ": ", args.size(), " arguments; it takes ", n, " (inputs then outputs) or the ",
                 n - outputs_, " inputs alone (its outputs are returned)");
    // The common case costs no allocation: numpy arrays of the right type and shape, passed in place.
    void* ptrs[kMaxArgs];
    py::object arrays[kMaxArgs];      // what each argument is read from (kept alive over the call)
    DlpackTensor borrowed[kMaxArgs];  // tensors taken through DLPack
    std::vector<NDArray> copies;      // arguments that could not be passed in place (by index)
    auto what = [&](size_t i) { return name_ + ": argument " + std::to_string(i) + " '" + sig_.args[i].name + "'"; };
    size_t next = 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      const runtime::ArgSpec& spec = sig_.args[i];
      bytes += nbytes_[i];
      if (allocate && is_output_[i]) {
        py::array out = numpy_view(NDArray::empty(spec.shape, spec.dtype));
        ptrs[i] = out.mutable_data();
        arrays[i] = out;
        continue;
      }
      py::object a = args[next++];
      if (!py::isinstance<py::array>(a)) {
        if (py::hasattr(a, "__dlpack__")) {
          borrowed[i] = DlpackTensor(a, what(i));
          const DLTensor& t = borrowed[i].tensor();
          const bool same =
              DataType(t.dtype) == spec.dtype && std::vector<int64_t>(t.shape, t.shape + t.ndim) == spec.shape;
          if (same && borrowed[i].in_place()) {
            ptrs[i] = borrowed[i].data();
            arrays[i] = a;
            continue;
          }
          borrowed[i] = DlpackTensor();  // strided, unaligned or of another type: read through numpy (checked, copied)
        } else if (!py::hasattr(a, "__array__") || py::isinstance<py::str>(a)) {
          LOOM_THROW(TypeError, what(i), " is a ", type_name(a), ", not an array");
        }
        a = py::module_::import("numpy").attr("asarray")(a);
      }
      py::array arr = py::reinterpret_borrow<py::array>(a);
      arrays[i] = arr;
      if (!matches(arr, i)) {
        std::vector<int64_t> shape(arr.shape(), arr.shape() + arr.ndim());
        const std::string dtype = py::str(arr.dtype()).cast<std::string>();
        if (numpy_dtype_name(spec.dtype) != dtype)
          LOOM_THROW(TypeError, what(i), " is ", dtype, shape_str(shape), ", expects ", spec.str());
        check_arg(spec, spec.dtype, shape, what(i));
      }
      if (is_output_[i] && !arr.writeable()) LOOM_THROW(TypeError, what(i), " is an output and read-only");
      if ((arr.flags() & py::array::c_style) && reinterpret_cast<uintptr_t>(arr.data()) % kAlignment == 0) {
        ptrs[i] = const_cast<void*>(arr.data());
      } else {
        if (copies.empty()) copies.resize(n);
        copies[i] = to_ndarray(arr, what(i));
        ptrs[i] = copies[i].raw_data();
        ++copied_;
      }
    }
    int32_t rc;
    if (bytes >= kReleaseGilBytes) {  // small calls keep the GIL: releasing it costs more than they take
      py::gil_scoped_release released;
      rc = fn_(ptrs);
    } else {
      rc = fn_(ptrs);
    }
    if (rc != 0) LOOM_THROW(RuntimeError, name_, ": ", ::loom_get_last_error());
    if (!copies.empty()) {
      py::object copyto = py::module_::import("numpy").attr("copyto");
      for (size_t i = 0; i < n; ++i)
        if (copies[i].defined() && is_output_[i]) copyto(arrays[i], numpy_view(copies[i]));
    }
    if (!allocate) return py::none();
    if (outputs_ == 1)
      for (size_t i = 0; i < n; ++i)
        if (is_output_[i]) return arrays[i];
    py::tuple out(outputs_);
    for (size_t i = 0, k = 0; i < n; ++i)
      if (is_output_[i]) out[k++] = arrays[i];
    return out;
  }

  const runtime::FunctionSignature& signature() const { return sig_; }
  const std::string& name() const { return name_; }
  int64_t copied() const { return copied_; }

 private:
  runtime::Module module_;
  std::string name_;
  std::vector<bool> is_output_;
  runtime::FunctionSignature sig_;
  runtime::CompiledFn fn_ = nullptr;
  int64_t copied_ = 0;
  size_t outputs_ = 0;
  std::vector<char> kinds_;      // per argument: numpy's dtype kind ('f', 'i', 'u', 'b')
  std::vector<int64_t> nbytes_;  // per argument

  // The array has the argument's element type and shape (checked without building strings).
  bool matches(const py::array& a, size_t i) const {
    const runtime::ArgSpec& spec = sig_.args[i];
    py::dtype d = a.dtype();
    if (d.kind() != kinds_[i] || d.itemsize() != spec.dtype.bytes() || size_t(a.ndim()) != spec.shape.size() ||
        d.byteorder() == '>')
      return false;
    for (size_t k = 0; k < spec.shape.size(); ++k)
      if (a.shape(k) != spec.shape[k]) return false;
    return true;
  }
};

py::object build(const py::object& what, const py::object& args, const std::string& target, const std::string& name,
                 const py::object& config, const std::string& arch) {
  if (target != "llvm" && target != "cpu" && target != "accel" && target != "cuda")
    LOOM_THROW(ConfigError, "build: target '", target, "' is not one of llvm, accel, cuda");
  if (!config.is_none() && target != "accel")
    LOOM_THROW(ConfigError, "build: config is the accelerator's; it needs target='accel'");
  Lowered l;
  if (py::isinstance<Lowered>(what)) {
    l = what.cast<Lowered>();
  } else if (py::isinstance<Schedule>(what)) {
    if (args.is_none()) LOOM_THROW(TypeError, "build: a schedule needs its args (inputs then outputs)");
    l = lower(what.cast<std::shared_ptr<Schedule>>(), args, name, target);
  } else {
    LOOM_THROW(TypeError, "build: a ", type_name(what), " is neither a schedule nor a lowered function");
  }
  if (target == "accel") return build_accel_function(l, config);
  if (target == "cuda") return build_cuda_function(l, arch);
  if (l.target == "cuda") LOOM_THROW(ConfigError, "build: '", l.func.name, "' was lowered for cuda, not llvm");
  runtime::Module m;
  {
    py::gil_scoped_release released;
    m = codegen::build_llvm({l.func});
  }
  return py::cast(Function(std::move(m), l.func.name, l.is_output));
}

}  // namespace

void register_schedules(py::module_& m) {
  py::module_ te = m.attr("te").cast<py::module_>();
  py::class_<IntrinRef>(te, "TensorIntrin", "A tensor intrinsic: what tensorize replaces a loop nest with.")
      .def_property_readonly("name", [](const IntrinRef& t) { return t.intrin->name; });
  te.def(
      "decl_tensor_intrin",
      [](const Tensor& out, const py::object& inputs, const std::string& name) {
        return IntrinRef{schedule::declare_tensor_intrin(name, out, tensors(inputs, "decl_tensor_intrin: inputs"))};
      },
      py::arg("output"), py::arg("inputs"), py::arg("name"),
      "decl_tensor_intrin(output, inputs, name) -> TensorIntrin: the computation `output` over the\n"
      "placeholders `inputs`, which tensorize replaces by calls '<name>.<part>' (reset, update, body)\n"
      "taking the addresses of the inputs' and the output's first elements.");

  py::class_<Stage>(m, "Stage", "One operation's loops in a schedule (s[T]).")
      .def_property_readonly("name", &Stage::name)
      .def_property_readonly("op", [](const Stage& s) { return OperationRef{Tensor(s->origin_op)}; })
      .def_property_readonly("leaf_iter_vars", [](const Stage& s) { return refs(s.leaf_iter_vars()); })
      .def(
          "split",
          [](Stage& s, const py::object& parent, const py::object& factor, const py::object& nparts) {
            ir::IterVar p = iter_var(parent, s.name() + ".split");
            if (factor.is_none() == nparts.is_none())
              LOOM_THROW(ScheduleError, s.name(), ".split: give factor or nparts, one of them");
            auto r = factor.is_none() ? s.split_nparts(p, to_expr(nparts, nullptr, "split nparts"))
                                      : s.split(p, to_expr(factor, nullptr, "split factor"));
            return py::make_tuple(IterVarRef{r.first}, IterVarRef{r.second});
          },
          py::arg("parent"), py::arg("factor") = py::none(), py::arg("nparts") = py::none(),
          "split(parent, factor=None, nparts=None) -> (outer, inner)")
      .def(
          "tile",
          [](Stage& s, const py::object& x, const py::object& y, const py::object& xf, const py::object& yf) {
            return refs(s.tile(iter_var(x, "tile"), iter_var(y, "tile"), to_expr(xf, nullptr, "tile x_factor"),
                               to_expr(yf, nullptr, "tile y_factor")));
          },
          py::arg("x_parent"), py::arg("y_parent"), py::arg("x_factor"), py::arg("y_factor"),
          "tile(x, y, x_factor, y_factor) -> (x_outer, y_outer, x_inner, y_inner)")
      .def(
          "reorder",
          [](Stage& s, const py::args& order) {
            std::vector<ir::IterVar> ivs;
            for (auto v : order) ivs.push_back(iter_var(v, s.name() + ".reorder"));
            s.reorder(ivs);
          },
          "reorder(*axes): these loops in this order (the others keep their places).")
      .def(
          "fuse",
          [](Stage& s, const py::args& axes) {
            if (axes.size() < 2) LOOM_THROW(ScheduleError, s.name(), ".fuse: needs at least two axes");
            ir::IterVar f = iter_var(axes[0], "fuse");
            for (size_t i = 1; i < axes.size(); ++i) f = s.fuse(f, iter_var(axes[i], "fuse"));
            return IterVarRef{f};
          },
          "fuse(*axes) -> IterVar: adjacent loops, outermost first, as one.")
      .def(
          "vectorize", [](Stage& s, const py::object& v) { s.vectorize(iter_var(v, "vectorize")); }, py::arg("axis"))
      .def(
          "unroll", [](Stage& s, const py::object& v) { s.unroll(iter_var(v, "unroll")); }, py::arg("axis"))
      .def(
          "parallel", [](Stage& s, const py::object& v) { s.parallel(iter_var(v, "parallel")); }, py::arg("axis"))
      .def(
          "bind", [](Stage& s, const py::object& v, const std::string& tag) { s.bind(iter_var(v, "bind"), tag); },
          py::arg("axis"), py::arg("thread_tag"),
          "bind(axis, thread_tag): a GPU thread index (blockIdx.x, threadIdx.y, ...).")
      .def(
          "pragma",
          [](Stage& s, const py::object& v, const std::string& name, const py::object& value) {
            s.pragma(iter_var(v, "pragma"), name, to_expr(value, nullptr, "pragma value"));
          },
          py::arg("axis"), py::arg("name"), py::arg("value") = 1)
      .def(
          "set_scope", [](Stage& s, const std::string& scope) { s.set_scope(scope); }, py::arg("scope"),
          "set_scope(scope): where the stage's buffer lives (global, local, shared, or an accelerator's).")
      .def(
          "compute_at",
          [](Stage& s, const Stage& parent, const py::object& v) { s.compute_at(parent, iter_var(v, "compute_at")); },
          py::arg("parent"), py::arg("axis"))
      .def("compute_inline", [](Stage& s) { s.compute_inline(); })
      .def("compute_root", [](Stage& s) { s.compute_root(); })
      .def(
          "tensorize",
          [](Stage& s, const py::object& v, const IntrinRef& intrin) {
            s.tensorize(iter_var(v, "tensorize"), intrin.intrin);
          },
          py::arg("axis"), py::arg("intrin"));

  py::class_<Schedule, std::shared_ptr<Schedule>>(m, "Schedule", "A schedule: s[T] is T's stage.")
      .def(
          "__getitem__", [](const Schedule& s, const Tensor& t) { return s[t]; }, py::keep_alive<0, 1>())
      .def(
          "cache_read",
          [](Schedule& s, const Tensor& t, const std::string& scope, const py::object& readers) {
            return s.cache_read(t, scope, tensors(readers, "cache_read: readers"));
          },
          py::arg("tensor"), py::arg("scope"), py::arg("readers"))
      .def(
          "cache_write", [](Schedule& s, const Tensor& t, const std::string& scope) { return s.cache_write(t, scope); },
          py::arg("tensor"), py::arg("scope"))
      .def_property_readonly("stages", [](const py::object& self) {
        // Each stage points back at its schedule: every one keeps it alive (pybind11 ignores
        // keep_alive on properties).
        py::list out;
        for (const Stage& st : self.cast<const Schedule&>().stages()) {
          py::object o = py::cast(st);
          py::detail::keep_alive_impl(o, self);
          out.append(o);
        }
        return out;
      });
  m.def(
      "create_schedule",
      [](const py::object& outputs) { return std::make_shared<Schedule>(tensors(outputs, "create_schedule")); },
      py::arg("outputs"), "create_schedule(outputs) -> Schedule: a stage per operation, loops in their natural order.");

  py::class_<Lowered>(m, "LoweredFunc", "A lowered function: print it for its loop IR.")
      .def_property_readonly("name", [](const Lowered& l) { return l.func.name; })
      .def("__str__", [](const Lowered& l) { return ir::to_string(l.func); });
  m.def("lower", &lower, py::arg("schedule"), py::arg("args"), py::arg("name") = "main", py::kw_only(),
        py::arg("target") = "llvm",
        "lower(schedule, args, name='main', *, target='llvm') -> LoweredFunc: the loops, after every\n"
        "lowering pass (target 'cuda': with the GPU's passes, for bound thread indices; 'accel': as\n"
        "loom.build(target='accel') lowers); args are every\n"
        "input the computation reads and every output, in the function's order.");

  py::class_<Function>(m, "Function", "A compiled function: call it on arrays.")
      .def("__call__", &Function::call,
           "f(*arrays): inputs then outputs (written in place), or the inputs alone (the outputs are\n"
           "returned). Arrays are numpy arrays or tensors with __dlpack__ / __array__ (torch).")
      .def_property_readonly("name", &Function::name)
      .def_property_readonly(
          "args",
          [](const Function& f) {
            py::list out;
            for (const auto& a : f.signature().args) out.append(arg_spec_record(a));
            return out;
          },
          "The arguments: a list of {'name', 'shape', 'dtype'}.")
      .def_property_readonly("copies", &Function::copied,
                             "How many arguments calls have copied so far (0 when every array was passed in place).");
  m.def("build", &build, py::arg("schedule"), py::arg("args") = py::none(), py::kw_only(), py::arg("target") = "llvm",
        py::arg("name") = "main", py::arg("config") = py::none(), py::arg("arch") = "sm_90",
        "build(schedule_or_lowered, args=None, *, target='llvm', name='main', config=None, arch='sm_90')\n"
        "-> Function: target 'llvm': a loom.Function compiled for this machine's CPU by the LLVM backend;\n"
        "'accel': a loom.accel.Function for the accelerator of `config` (a loom.accel.Config or a file;\n"
        "VTA's default); 'cuda': a loom.CudaFunction, CUDA C compiled by NVRTC for `arch`.");
}

}  // namespace loom::python
