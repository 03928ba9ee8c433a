// Random valid instruction streams through a harness's driver (seeded): the library's
// accel::RandomStream at its default constraints, shared by the simulator fuzz tests (results
// against the reference model) and the performance model's tests (cycles against the RTL).
#pragma once
#include <optional>

#include "loom/accel/program_gen.h"

namespace loom::accel::test_streams {

class StreamFuzzer {
 public:
  StreamFuzzer(Driver& drv, const AccelConfig& config, uint64_t seed) : drv_(drv), cfg_(config), seed_(seed) {}

  // Places the image on the driver's device and emits `length` random instructions.
  void build(int length) {
    ProgramConstraints c;
    c.length = length;
    stream_.emplace(drv_, cfg_, c, seed_);
    stream_->build();
    initial = stream_->initial();
    image = stream_->image();
  }

  std::vector<int8_t> initial;
  accel::DeviceBuffer image;

 private:
  Driver& drv_;
  AccelConfig cfg_;
  uint64_t seed_;
  std::optional<RandomStream> stream_;
};

}  // namespace loom::accel::test_streams
