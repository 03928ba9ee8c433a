#include "loom/runtime/module.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "dim_json.h"
#include "loom/runtime/cpu_target.h"
#include "loom/runtime/error.h"
#include "loom/runtime/shared_object.h"

namespace loom::runtime {

std::string ArgSpec::str() const { return dtype.str() + (dims.empty() ? shape_str(shape) : shape_expr_str(dims)); }

std::string signatures_to_json(const std::vector<FunctionSignature>& sigs) {
  nlohmann::json fns = nlohmann::json::array();
  for (auto& s : sigs) {
    nlohmann::json args = nlohmann::json::array();
    for (auto& a : s.args) {
      nlohmann::json arg = {{"name", a.name}, {"shape", a.shape}, {"dtype", a.dtype.str()}};
      if (!a.dims.empty()) arg["dims"] = dims_to_json(a.dims);
      args.push_back(std::move(arg));
    }
    nlohmann::json fn = {{"name", s.name}, {"args", args}};
    if (!s.shape_vars.empty()) fn["shape_vars"] = s.shape_vars;
    fns.push_back(std::move(fn));
  }
  return nlohmann::json{{"format", "loom-module"}, {"version", 1}, {"functions", fns}}.dump();
}

std::vector<FunctionSignature> signatures_from_json(const std::string& text, const std::string& origin) {
  std::vector<FunctionSignature> sigs;
  try {
    auto j = nlohmann::json::parse(text);
    if (j.value("format", "") != "loom-module")
      LOOM_THROW(RuntimeError, origin, ": metadata is not a loom module description");
    for (auto& f : j.at("functions")) {
      FunctionSignature s;
      s.name = f.at("name").get<std::string>();
      for (auto& a : f.at("args")) {
        s.args.push_back({a.at("name").get<std::string>(), a.at("shape").get<std::vector<int64_t>>(),
                          DataType::parse(a.at("dtype").get<std::string>()),
                          a.contains("dims") ? dims_from_json(a.at("dims")) : ShapeExpr{}});
        if (!s.args.back().dims.empty() && s.args.back().dims.size() != s.args.back().shape.size())
          LOOM_THROW(RuntimeError, origin, ": malformed module metadata: argument '", s.args.back().name, "' of '",
                     s.name, "' has ", s.args.back().dims.size(), " dims for a shape of ", s.args.back().shape.size());
      }
      if (f.contains("shape_vars")) s.shape_vars = f.at("shape_vars").get<std::vector<std::string>>();
      for (const ArgSpec& a : s.args)
        for (const std::string& v : shape_variables(a.dims))
          if (std::find(s.shape_vars.begin(), s.shape_vars.end(), v) == s.shape_vars.end())
            LOOM_THROW(RuntimeError, origin, ": malformed module metadata: argument '", a.name, "' of '", s.name,
                       "' uses shape variable '", v, "', which the function does not list");
      sigs.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(RuntimeError, origin, ": malformed module metadata: ", e.what());
  } catch (const TypeError& e) {
    LOOM_THROW(RuntimeError, origin, ": malformed module metadata: ", e.what());
  } catch (const std::invalid_argument& e) {
    LOOM_THROW(RuntimeError, origin, ": malformed module metadata: ", e.what());
  }
  return sigs;
}

struct Module::Impl {
  std::vector<FunctionSignature> sigs;
  std::vector<CompiledFn> fns;
  std::map<std::string, size_t> index;
  std::shared_ptr<void> owner;

  size_t find(const std::string& name) const {
    auto it = index.find(name);
    if (it == index.end()) {
      std::string have;
      for (auto& s : sigs) have += (have.empty() ? "" : ", ") + s.name;
      LOOM_THROW(RuntimeError, "module has no function '", name, "' (it has: ", have.empty() ? "none" : have, ")");
    }
    return it->second;
  }
};

Module::Module(std::vector<FunctionSignature> sigs, std::vector<CompiledFn> functions, std::shared_ptr<void> owner) {
  LOOM_CHECK(sigs.size() == functions.size(), "one function per signature");
  auto impl = std::make_shared<Impl>();
  for (size_t i = 0; i < sigs.size(); ++i) {
    if (!impl->index.emplace(sigs[i].name, i).second)
      LOOM_THROW(RuntimeError, "module defines function '", sigs[i].name, "' twice");
  }
  impl->sigs = std::move(sigs);
  impl->fns = std::move(functions);
  impl->owner = std::move(owner);
  impl_ = std::move(impl);
}

Module Module::load(const std::string& path) {
  dlerror();
  // A bare name of a file in the working directory is that file ("g.so" written by `loom export`);
  // dlopen alone would search the library path instead and miss it. Other bare names
  // ("libm.so.6") are still looked up as libraries.
  std::string file = path;
  if (path.find('/') == std::string::npos && ::access(path.c_str(), F_OK) == 0) file = "./" + path;
  // The library's loom_* hooks resolve to this runtime's (loaded with RTLD_LOCAL under Python).
  make_symbols_global(reinterpret_cast<const void*>(&loom_set_last_error));
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    // Another architecture's library: name both instead of the loader's "wrong ELF class".
    char header[20] = {};
    std::ifstream(path, std::ios::binary).read(header, sizeof header);
    const std::string arch = elf_cpu_arch(std::string_view(header, sizeof header));
    if (!arch.empty() && arch != this_cpu_arch())
      LOOM_THROW(RuntimeError, "cannot load module '", path, "': it is ", arch, " code and this process runs on ",
                 this_cpu_arch());
    LOOM_THROW(RuntimeError, "cannot load module '", path, "': ", err ? err : "unknown dlopen error");
  }
  std::shared_ptr<void> owner(handle, [](void* h) { dlclose(h); });
  auto* meta = static_cast<const char*>(dlsym(handle, kMetadataSymbol));
  if (!meta)
    LOOM_THROW(RuntimeError, "cannot load module '", path, "': no ", kMetadataSymbol,
               " symbol (not exported by Loom?)");
  auto sigs = signatures_from_json(meta, "module '" + path + "'");
  std::vector<CompiledFn> fns;
  for (auto& s : sigs) {
    void* f = dlsym(handle, s.name.c_str());
    if (!f)
      LOOM_THROW(RuntimeError, "cannot load module '", path, "': metadata lists function '", s.name,
                 "' but the library does not define it");
    fns.push_back(reinterpret_cast<CompiledFn>(f));
  }
  return Module(std::move(sigs), std::move(fns), std::move(owner));
}

Module Module::load_from_memory(const std::string& bytes, const std::string& origin) {
  int fd = memfd_create("loom_module", MFD_CLOEXEC);
  if (fd < 0) LOOM_THROW(RuntimeError, origin, ": cannot create an in-memory file for the kernel library");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      LOOM_THROW(RuntimeError, origin, ": cannot write the kernel library to an in-memory file");
    }
    done += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    Module m = load(path);
    // The descriptor stays open while the library is loaded: the dynamic loader recognizes a
    // library by its path, so if the number were reused while this one is still loaded, the
    // next model's "/proc/self/fd/N" would silently get this library back.
    std::shared_ptr<void> lib = m.impl_->owner;
    std::shared_ptr<void> owner(lib.get(), [lib, fd](void*) mutable {
      lib.reset();
      ::close(fd);
    });
    return Module(m.impl_->sigs, m.impl_->fns, std::move(owner));
  } catch (const RuntimeError& e) {
    ::close(fd);
    LOOM_THROW(RuntimeError, origin, ": kernel library: ", e.what());
  }
}

bool Module::has_function(const std::string& name) const { return impl_ && impl_->index.count(name) != 0; }

std::vector<std::string> Module::function_names() const {
  std::vector<std::string> names;
  if (impl_)
    for (auto& s : impl_->sigs) names.push_back(s.name);
  return names;
}

const FunctionSignature& Module::signature(const std::string& name) const {
  if (!impl_) LOOM_THROW(RuntimeError, "signature of '", name, "' requested from an empty module");
  return impl_->sigs[impl_->find(name)];
}

CompiledFn Module::get_function(const std::string& name) const {
  if (!impl_) LOOM_THROW(RuntimeError, "function '", name, "' requested from an empty module");
  return impl_->fns[impl_->find(name)];
}

void Module::call(const std::string& name, const std::vector<NDArray>& args) const {
  if (!impl_) LOOM_THROW(RuntimeError, "call of '", name, "' on an empty module");
  size_t i = impl_->find(name);
  const FunctionSignature& sig = impl_->sigs[i];
  if (args.size() != sig.args.size())
    LOOM_THROW(ShapeError, name, ": expects ", sig.args.size(), " arguments, got ", args.size());
  std::vector<void*> ptrs(args.size());
  std::map<std::string, int64_t> values;
  for (size_t k = 0; k < args.size(); ++k) {
    const ArgSpec& spec = sig.args[k];
    const NDArray& a = args[k];
    if (!a.defined()) LOOM_THROW(RuntimeError, name, ": argument '", spec.name, "' is an undefined array");
    std::string got = a.dtype().str() + shape_str(a.shape());
    if (a.dtype() != spec.dtype)
      LOOM_THROW(TypeError, name, ": argument '", spec.name, "' expects ", spec.str(), ", got ", got);
    if (spec.is_static() ? a.shape() != spec.shape : !bind_shape(spec.dims, a.shape(), values).empty())
      LOOM_THROW(ShapeError, name, ": argument '", spec.name, "' expects ", spec.str(), ", got ", got,
                 spec.is_static() ? "" : ": " + bind_shape(spec.dims, a.shape(), values));
    ptrs[k] = a.raw_data();
  }
  std::vector<int64_t> var_values;
  for (const std::string& v : sig.shape_vars) {
    auto it = values.find(v);
    if (it == values.end())
      LOOM_THROW(ShapeError, name, ": shape variable '", v, "' is not a whole dimension of any argument");
    var_values.push_back(it->second);
  }
  if (!sig.shape_vars.empty()) ptrs.push_back(var_values.data());
  loom_set_last_error("");
  int32_t rc = impl_->fns[i](ptrs.data());
  if (rc != 0) {
    const char* msg = loom_get_last_error();
    LOOM_THROW(RuntimeError, name, ": ", msg && *msg ? msg : "failed", " (code ", rc, ")");
  }
}

}  // namespace loom::runtime

namespace {
thread_local std::string tls_last_error;
}

extern "C" void loom_set_last_error(const char* message) { tls_last_error = message ? message : ""; }
extern "C" const char* loom_get_last_error() { return tls_last_error.c_str(); }
