// One random stream (StreamFuzzer) on a harness's device and on the reference model of
// accel_harness.h over a copy of its image: the shared check of the simulator fuzz tests.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "accel/accel_harness.h"
#include "stream_fuzzer.h"

namespace loom::accel::test_streams {

// Builds `length` random instructions from `seed`, runs them on h's device and on the reference
// model; returns "" when the images after the run are equal, else the first differing byte and
// the stream's disassembly.
inline std::string stream_against_reference(test::AccelHarness& h, uint64_t seed, int length) {
  StreamFuzzer f(h.drv, h.cfg, seed);
  f.build(length);
  std::vector<Instruction> stream = h.drv.stream();
  // Reference: program order over a host copy of the image; micro-op kernels are read from the
  // device (the run never writes them).
  std::vector<int8_t> mem = f.initial;
  const uint64_t base = f.image.addr;
  auto in_image = [&](uint64_t a, size_t n) { return a >= base && a + n <= base + mem.size(); };
  std::string outside;
  test::ReferenceModel ref(
      h.cfg,
      [&](uint64_t a, void* d, size_t n) {
        if (in_image(a, n))
          std::memcpy(d, &mem[a - base], n);
        else
          h.dev->read(a, d, n);
      },
      [&](uint64_t a, const void* s, size_t n) {
        if (!in_image(a, n)) {
          outside = "the reference stored outside the image at " + std::to_string(a);
          return;
        }
        std::memcpy(&mem[a - base], s, n);
      });
  ref.run(stream);
  if (!outside.empty()) return outside;
  h.drv.synchronize();
  auto got = h.download<int8_t>(f.image, mem.size());
  size_t first = 0;
  while (first < got.size() && got[first] == mem[first]) ++first;
  if (first == got.size()) return "";
  return "first difference at byte " + std::to_string(first) + " of the image\n" + disassemble(stream);
}

}  // namespace loom::accel::test_streams
