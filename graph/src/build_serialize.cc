#include <cstring>

#include "build_steps.h"

namespace loom::graph {

runtime::ModelFile serialize(const Graph& g, ValuePlan& plan, KernelBackends& backends) {
  runtime::ModelFile file;
  file.graph_json = plan.exec.to_json();
  file.params = runtime::aligned_buffer(plan.params_bytes);
  file.params_bytes = plan.params_bytes;
  for (int id : plan.param_nodes) {
    const NDArray& v = g.node(id).value;
    std::memcpy(file.params.get() + plan.exec.values[size_t(plan.value_of.at(id))].param_offset, v.raw_data(),
                v.nbytes());
  }
  for (KernelBackend* b :
       std::initializer_list<KernelBackend*>{backends.cpu.get(), backends.cuda.get(), backends.accel.get()})
    if (b) b->write(file);
  return file;
}

}  // namespace loom::graph
