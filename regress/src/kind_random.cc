// random:SEED: a constrained-random accelerator program (accel/program_gen.h) for the job's config,
// run on the job's backend and on the reference backend (fsim by default) with per-instruction
// commit records; the first instruction whose records differ fails the job. The group's "params"
// are the generator's constraints ({"length": 200, "weights": {"gemm": 3}, ...}) and, optionally:
// - "directed": true: seed S's program is drawn toward the ISA bins that seeds 1..S-1 (drawn the
//   same way) left unhit, so that a group of seeds converges on full coverage while each job still
//   runs alone (on any node, in any order); drawing the earlier seeds costs time in S (about a
//   millisecond each), so seeds go up to 20,000;
// - "faults": a share in [0, 1]: that share of the seeds get one fault planted in their stream
//   (accel/program_faults.h), and the job checks that its backend stops at the instruction the
//   reference stops at, with the same fault where both name one.
// Jobs without a planted fault also exercise the control registers around the run
// (accel/control_exercise.h), and the job's backend must answer them as the reference does.
// The job's metrics carry the program's ISA coverage (accel/isa_coverage.h), which the run's
// report merges.
#include <iostream>
#include <optional>
#include <random>

#include "builtin_job_kinds.h"
#include "loom/accel/control_exercise.h"
#include "loom/accel/isa_coverage.h"
#include "loom/accel/program_faults.h"
#include "loom/accel/program_gen.h"
#include "loom/runtime/error.h"
#include "loom/sim/commit_log.h"

namespace loom::regress {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The job's own parameters, and the rest: the generator's constraints.
struct RandomParams {
  bool directed = false;
  double faults = 0;
  json constraints;
};

RandomParams read_params(json params) {
  const std::string where = "'params' of random programs: ";
  RandomParams r;
  if (params.contains("directed")) {
    if (!params["directed"].is_boolean())
      LOOM_THROW(ConfigError, where, "\"directed\" must be true or false, got ", params["directed"].dump());
    r.directed = params["directed"].get<bool>();
    params.erase("directed");
  }
  if (params.contains("faults")) {
    const json& f = params["faults"];
    if (!f.is_number() || !(f.get<double>() >= 0 && f.get<double>() <= 1))
      LOOM_THROW(ConfigError, where, "\"faults\" must be a share in [0, 1], got ", f.dump());
    r.faults = f.get<double>();
    params.erase("faults");
  }
  r.constraints = params;
  return r;
}

// A directed job draws every earlier seed first: the largest seed it takes.
constexpr uint64_t kMaxDirectedSeed = 20000;

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
    accel::ProgramConstraints::parse(read_params(params).constraints.dump(), "'params' of random programs");
  }
  void run(const JobSpec& job, const Workload& w, const fs::path&, const fs::path&, JobOutcome& o) const override {
    const accel::AccelConfig cfg = accel::AccelConfig::from_json(job.config.dump());
    const RandomParams params = read_params(job.params);
    const accel::ProgramConstraints c = accel::ProgramConstraints::parse(params.constraints.dump(), "'params'");
    const uint64_t seed = std::stoull(w.target);
    if (params.directed && seed > kMaxDirectedSeed)
      LOOM_THROW(ConfigError, "random:", seed, ": a directed group draws every earlier seed first; its seeds go up to ",
                 kMaxDirectedSeed);
    // The image lives on a scratch device while the program is built (one per program: each
    // program allocates its own).
    auto draw = [&](const accel::ProgramConstraints& pc, uint64_t s) {
      auto scratch = make_accel_device("fsim", cfg.to_json());
      return std::make_pair(accel::random_program(*scratch, cfg, pc, s), std::move(scratch));
    };
    accel::IsaCoverage seen;
    for (uint64_t s = 1; params.directed && s < seed; ++s) seen.sample(draw(accel::toward_holes(c, seen), s).first);
    auto [p, scratch] = draw(params.directed ? accel::toward_holes(c, seen) : c, seed);
    if (params.directed) o.metrics["isa_bins_before"] = seen.bins_hit();
    o.metrics["instructions"] = p.insn_count;
    accel::IsaCoverage coverage;
    coverage.sample(p);  // the program as drawn (a planted fault may not decode)
    json hits = json::object();
    for (size_t k = 0; k < coverage.hits().size(); ++k)
      if (coverage.hits()[k]) hits[accel::isa_coverage_bins()[k].id()] = coverage.hits()[k];
    o.metrics["isa_coverage"] = hits;
    std::mt19937_64 fault_draw(seed ^ 0x6661756c74ull);  // its own stream: the program stays the seed's
    if (params.faults > 0 && std::uniform_real_distribution<double>(0, 1)(fault_draw) < params.faults)
      return run_faulty(job, std::move(p), fault_draw(), o);

    uint64_t cycles = 0;                              // the last run's
    const uint64_t host_seed = seed ^ 0x686f7374ull;  // the control exercise's draw, the same on both backends
    auto records = [&](const std::string& backend, const std::string& role, accel::ControlTrace& trace) {
      auto dev = open_job_device(job, backend, job.config, role);
      std::string error;
      auto r = sim::run_recorded(
          dev.get(), backend, [&] { cycles = accel::run_with_control_exercise(p, *dev, host_seed, trace).cycles; },
          error, role + " backend: ");
      if (!error.empty()) LOOM_THROW(DeviceError, role, " backend ", backend, ": ", error);
      return r;
    };
    accel::ControlTrace got_trace, want_trace;
    auto got = records(job.backend, "the job's", got_trace);
    if (cycles) o.metrics["cycles"] = cycles;
    const std::string& ref = job.expect.reference;
    if (ref == "none") return;
    auto want = records(ref, "the reference", want_trace);
    const std::optional<std::string> host_diff = accel::first_difference(want_trace, got_trace);
    o.checks.push_back({"control registers", !host_diff,
                        host_diff ? *host_diff : std::to_string(got_trace.size()) + " accesses answered alike"});
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

 private:
  // A planted fault: the job's backend must stop with the fault the reference names, at the same
  // instruction (without a reference: with a fault at all).
  void run_faulty(const JobSpec& job, accel::Program p, uint64_t fault_seed, JobOutcome& o) const {
    const std::optional<accel::PlantedFault> planted = accel::plant_fault(p, fault_seed);
    if (!planted) LOOM_THROW(Error, "no instruction of the program can carry a planted fault");
    std::cout << "planted: " << planted->what << std::endl;
    o.metrics["planted_fault"] = planted->what;
    auto end_on = [&](const std::string& backend, const std::string& role) {
      auto dev = open_job_device(job, backend, job.config, role);
      std::string message;
      try {
        accel::run_program(p, *dev);
      } catch (const DeviceError& err) {
        message = err.what();
      }
      const accel::RunStop e = accel::run_stop(*dev);
      std::cout << role << " backend " << backend << ": " << e.describe() << (message.empty() ? "" : ": ") << message
                << std::endl;
      return e;
    };
    const accel::RunStop got = end_on(job.backend, "the job's");
    o.metrics["fault"] = got.describe();
    const std::string& ref = job.expect.reference;
    if (ref == "none") {
      o.checks.push_back({"planted fault", got.error,
                          got.error ? got.describe() : "the planted fault went unreported: " + planted->what});
      return;
    }
    const accel::RunStop want = end_on(ref, "the reference");
    const bool same = got.agrees(want) && got.error;
    o.checks.push_back({"reference " + ref, same,
                        same ? got.describe() + ", as " + ref + " reports (" + planted->what + ")"
                             : job.backend + ": " + got.describe() + "; " + ref + ": " + want.describe() + " (" +
                                   planted->what + ")"});
  }
};

}  // namespace

std::unique_ptr<JobKind> make_random_job_kind() { return std::make_unique<RandomJobKind>(); }

}  // namespace loom::regress
