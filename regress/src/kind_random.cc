// random:SEED: a constrained-random accelerator program (accel/program_gen.h) for the job's config,
// run on the job's backend and on the reference backend (fsim by default) with per-instruction
// commit records; the first instruction whose records differ fails the job. The group's "params"
// are the generator's constraints ({"length": 200, "weights": {"gemm": 3}, ...}) and, optionally,
// "directed": true: seed S's program is drawn toward the ISA bins that seeds 1..S-1 (drawn the same
// way) left unhit, so that a group of seeds converges on full coverage while each job still runs
// alone (on any node, in any order). The job's metrics carry the program's ISA coverage
// (accel/isa_coverage.h), which the run's report merges.
#include <iostream>

#include "builtin_job_kinds.h"
#include "loom/accel/isa_coverage.h"
#include "loom/accel/program_gen.h"
#include "loom/runtime/error.h"
#include "loom/sim/commit_log.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// "directed" (a bool, default false), and the params without it: the generator's constraints.
bool directed(const json& params) {
  if (!params.contains("directed")) return false;
  if (!params["directed"].is_boolean())
    LOOM_THROW(ConfigError, "'params' of random programs: \"directed\" must be true or false, got ",
               params["directed"].dump());
  return params["directed"].get<bool>();
}
json constraints_of(json params) {
  params.erase("directed");
  return params;
}

class RandomJobKind : public JobKind {
 public:
  std::string name() const override { return "random"; }
  std::string syntax() const override { return "random:SEED"; }
  Workload parse(const std::string& rest, const std::string& text) const override {
    Workload w = JobKind::parse(rest, text);
    if (rest.empty() || rest.size() > 19 || rest.find_first_not_of("0123456789") != std::string::npos)
      LOOM_THROW(Error, "workload '", text, "': the seed '", rest, "' is not a whole number (", syntax(), ")");
    return w;
  }
  ResolvedWorkload resolve(const Workload&, const std::string& text, const FileResolver&) const override {
    ResolvedWorkload r;
    r.text = text;
    r.default_reference = "fsim";
    r.cpu_reference = false;  // the reference is another backend's commit records
    return r;
  }
  void check_params(const json& params) const override {
    directed(params);
    accel::ProgramConstraints::parse(constraints_of(params).dump(), "'params' of random programs");
  }
  void run(const JobSpec& job, const Workload& w, const fs::path&, const fs::path&, JobOutcome& o) const override {
    const accel::AccelConfig cfg = accel::AccelConfig::from_json(job.config.dump());
    const accel::ProgramConstraints c =
        accel::ProgramConstraints::parse(constraints_of(job.params).dump(), "'params'");
    const uint64_t seed = std::stoull(w.target);
    // The image lives on a scratch device while the program is built (one per program: each
    // program allocates its own).
    auto draw = [&](const accel::ProgramConstraints& pc, uint64_t s) {
      auto scratch = make_accel_device("fsim", cfg.to_json());
      return std::make_pair(accel::random_program(*scratch, cfg, pc, s), std::move(scratch));
    };
    accel::IsaCoverage seen;
    const bool steer = directed(job.params);
    for (uint64_t s = 1; steer && s < seed; ++s) seen.sample(draw(accel::toward_holes(c, seen), s).first);
    auto [p, scratch] = draw(steer ? accel::toward_holes(c, seen) : c, seed);
    if (steer) o.metrics["isa_bins_before"] = seen.bins_hit();
    uint64_t cycles = 0;  // the last run's
    auto records = [&](const std::string& backend, const std::string& role) {
      auto dev = open_job_device(job, backend, job.config, role);
      std::string error;
      auto r = sim::run_recorded(
          dev.get(), backend, [&] { cycles = accel::run_program(p, *dev).cycles; }, error, role + " backend: ");
      if (!error.empty()) LOOM_THROW(DeviceError, role, " backend ", backend, ": ", error);
      return r;
    };
    auto got = records(job.backend, "the job's");
    if (cycles) o.metrics["cycles"] = cycles;
    o.metrics["instructions"] = p.insn_count;
    accel::IsaCoverage coverage;
    coverage.sample(p);
    json hits = json::object();
    for (size_t k = 0; k < coverage.hits().size(); ++k)
      if (coverage.hits()[k]) hits[accel::isa_coverage_bins()[k].id()] = coverage.hits()[k];
    o.metrics["isa_coverage"] = hits;
    const std::string& ref = job.expect.reference;
    if (ref == "none") return;
    auto want = records(ref, "the reference");
    if (auto d = sim::first_divergence(want, got)) {
      std::cout << accel::disassemble(p.instructions());
      o.checks.push_back({"reference " + ref, false,
                          "instruction " + std::to_string(d->index) + " (run " + std::to_string(d->run) +
                              "): " + (d->b ? d->b->describe() : std::string("not committed")) + "; " + ref + ": " +
                              (d->a ? d->a->describe() : std::string("not committed"))});
    } else {
      o.checks.push_back({"reference " + ref, true, std::to_string(got.size()) + " instructions committed alike"});
    }
  }
};

}  // namespace

std::unique_ptr<JobKind> make_random_job_kind() { return std::make_unique<RandomJobKind>(); }

}  // namespace loom::regress
