// The kinds of regression job, registered in code: a workload's text "KIND:TARGET" names the kind
// that parses it, settles it when the manifest is read, and runs it in a worker. Loom registers
// op, resnet18, program, model and command here; other libraries add theirs (libloom_dse:
// dse-point) with LOOM_REGISTER_JOB_KIND, so a sweep submits typed jobs instead of shell commands.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/regress/job.h"
#include "loom/regress/manifest.h"

namespace loom::regress {

// A workload as the manifest settles it: its text with absolute paths (so that a worker anywhere
// finds the files) and the rules the group's other fields must follow.
struct ResolvedWorkload {
  std::string text;
  bool own_config = false;        // it carries its accelerator config: the group gives none
  std::string default_reference;  // the reference without an "expect" (cpu or none)
  bool cpu_reference = true;      // "reference": "cpu" means something for it
  std::string no_reference;       // why it takes no reference at all ("" when it may)
  bool accuracy = false;          // min_accuracy applies (a model Loom quantizes)
  bool model_inputs = false;      // inputs_from applies
};

// Turns a path in a workload into an absolute one and adds it to the job's files (its contents
// join the cache key); an Error naming the workload when there is no such file.
using FileResolver = std::function<std::string(const std::string& path)>;

class JobKind {
 public:
  virtual ~JobKind() = default;
  virtual std::string name() const = 0;    // "op"
  virtual std::string syntax() const = 0;  // "op:NAME[,key=value...]", for error messages
  // The parts of the text after "KIND:" (Error naming `text` when malformed).
  virtual Workload parse(const std::string& rest, const std::string& text) const;
  // At manifest time: paths made absolute through `file`, the rules for the group's fields.
  virtual ResolvedWorkload resolve(const Workload& w, const std::string& text, const FileResolver& file) const;
  // The group's "params" (kind-specific parameters, part of the cache key): Error naming the key.
  virtual void check_params(const nlohmann::json& params) const;
  // Runs the job in this process (the worker's), filling `o`; throws for an error of the job.
  virtual void run(const JobSpec& job, const Workload& w, const std::filesystem::path& dir,
                   const std::filesystem::path& artifacts, JobOutcome& o) const = 0;
  // Why the job cannot run here, found without running it ("" when it can); the default opens
  // nothing and checks the job's backend and reference against the job's config.
  virtual std::string problem(const JobSpec& job, const Workload& w) const;
};

// Error when a kind of that name is already registered.
void register_job_kind(std::unique_ptr<JobKind> kind);
// The kind of that name; nullptr when none is registered.
const JobKind* find_job_kind(const std::string& name);
// The same, or an Error saying unknown_job_kind(name).
const JobKind& job_kind(const std::string& name);
std::vector<std::string> job_kind_names();
// "unknown kind 'NAME' (command, model, op, ...)".
std::string unknown_job_kind(const std::string& name);

// The config JSON `backend` opens for the job: its config plus the device section that backend
// reads ("rtl" for rtl and board-rtl; none for a remote device, whose options are the server's).
// With job.rtl_coverage, a backend that declares the "coverage" option writes job.coverage_file.
std::string device_json(const JobSpec& job, const nlohmann::json& config, const std::string& backend);
// Whether `backend` declares the "coverage" option (the RTL's coverage build).
bool declares_coverage(const std::string& backend);

namespace detail {
struct JobKindRegistrar {
  explicit JobKindRegistrar(std::unique_ptr<JobKind> kind) { register_job_kind(std::move(kind)); }
};
}  // namespace detail

}  // namespace loom::regress

#define LOOM_JOB_KIND_CONCAT2(a, b) a##b
#define LOOM_JOB_KIND_CONCAT(a, b) LOOM_JOB_KIND_CONCAT2(a, b)
// At namespace scope in a library's source: registers an instance of CLASS when the library loads.
#define LOOM_REGISTER_JOB_KIND(CLASS)                                                         \
  static const ::loom::regress::detail::JobKindRegistrar LOOM_JOB_KIND_CONCAT(loom_job_kind_, \
                                                                              __LINE__)(std::make_unique<CLASS>())
