// place_groups: the device of every fused group. An accelerator operator runs on the accelerator;
// in a build with CUDA every other group runs on the GPU unless the CUDA backend says it cannot
// (then on the CPU, with the reason in BuildResult::cpu_fallback); else on the CPU.
// BuildOptions::placement then moves named nodes, checked against the device's backend.
#include "build_steps.h"
#include "loom/runtime/error.h"
#include "loom/runtime/suggest.h"

namespace loom::graph {

using runtime::KernelDevice;

bool Placement::made_by(int id, KernelDevice d) const {
  auto it = made_on.find(id);
  return it != made_on.end() && it->second == d;
}

bool Placement::read_by(int id, KernelDevice d) const {
  auto it = read_on.find(id);
  return it != read_on.end() && it->second.count(d);
}

bool Placement::read_off(int id, KernelDevice d) const {
  auto it = read_on.find(id);
  if (it == read_on.end()) return false;
  for (KernelDevice r : it->second)
    if (r != d) return true;
  return false;
}

namespace {

// The device BuildOptions::placement gives the group, if it names one of its nodes (`first`: the
// first it names).
std::optional<KernelDevice> requested_device(const Graph& g, const FusedGroup& grp, const BuildOptions& options,
                                             std::set<std::string>& used, std::string& first) {
  std::optional<KernelDevice> want;
  for (int id : grp.nodes) {
    auto it = options.placement.find(g.node(id).name);
    if (it == options.placement.end()) continue;
    used.insert(it->first);
    if (want && *want != it->second)
      LOOM_THROW(ConfigError, "placement puts node '", first, "' on ", runtime::device_name(*want), " and node '",
                 it->first, "' on ", runtime::device_name(it->second), ", but they are fused into one kernel (",
                 group_names(g, grp), ")");
    if (!want) first = it->first;
    want = it->second;
  }
  return want;
}

}  // namespace

Placement place_groups(const Graph& g, const FusionPlan& fusion, const KernelBackends& backends,
                       const BuildOptions& options) {
  Placement p;
  std::set<std::string> used;
  for (const FusedGroup& grp : fusion.groups) {
    const OpDef& def = op_def(g.node(grp.anchor).op);
    KernelDevice d = def.device == KernelDevice::Accel ? KernelDevice::Accel : KernelDevice::CPU;
    if (d == KernelDevice::CPU && backends.cuda) {
      std::string why = backends.cuda->unsupported(g, grp);
      if (why.empty())
        d = KernelDevice::Cuda;
      else
        p.cpu_fallback.push_back(group_names(g, grp) + " (" + group_ops(g, grp) + "): " + why);
    }
    std::string named;
    if (std::optional<KernelDevice> want = requested_device(g, grp, options, used, named); want && *want != d) {
      const std::string node = grp.nodes.size() == 1 ? named : named + "' (fused: " + group_names(g, grp) + ")";
      KernelBackend* backend = backends.of(*want);
      if (!backend)
        LOOM_THROW(ConfigError, "placement puts node '", node, grp.nodes.size() == 1 ? "'" : "", " on ",
                   runtime::device_name(*want),
                   ", which is not a target of this build (add it to the targets: loom compile --target)");
      if (std::string why = backend->unsupported(g, grp); !why.empty())
        LOOM_THROW(ConfigError, "placement puts node '", node, grp.nodes.size() == 1 ? "'" : "", " on ",
                   runtime::device_name(*want), ": ", why);
      if (d == KernelDevice::Cuda)
        p.cpu_fallback.push_back(group_names(g, grp) + " (" + group_ops(g, grp) + "): placed on the CPU");
      d = *want;
    }
    if (d == KernelDevice::Accel && !backends.accel)
      LOOM_THROW(ConfigError, "node '", group_names(g, grp), "' is an accelerator operator (", def.name,
                 "), but this build has no accelerator target");
    p.device.push_back(d);
    p.made_on[grp.output] = d;
    for (int in : grp.inputs) p.read_on[in].insert(d);
  }
  for (const auto& [name, device] : options.placement)
    if (!used.count(name)) {
      std::vector<std::string> names;
      for (const FusedGroup& grp : fusion.groups)
        for (int id : grp.nodes) names.push_back(g.node(id).name);
      LOOM_THROW(ConfigError, "placement names node '", name, "', which no kernel of the optimized graph computes",
                 did_you_mean(name, names), "; loom compile --dump prints the optimized graph");
    }
  for (int o : g.outputs) p.read_on[o].insert(KernelDevice::CPU);
  // The copies: before a group on a device, what it reads that its device did not make (once per
  // run: before the first such reader); after it, its output when read elsewhere.
  std::set<std::pair<int, KernelDevice>> copied_in;
  for (size_t k = 0; k < fusion.groups.size(); ++k) {
    const FusedGroup& grp = fusion.groups[k];
    const KernelDevice d = p.device[k];
    p.upload.emplace_back();
    p.download.emplace_back();
    if (d == KernelDevice::CPU) continue;
    for (int in : grp.inputs)
      if (!g.node(in).is_constant() && !p.made_by(in, d) && copied_in.insert({in, d}).second)
        p.upload.back().push_back(in);
    if (p.read_off(grp.output, d)) p.download.back().push_back(grp.output);
  }
  return p;
}

}  // namespace loom::graph
