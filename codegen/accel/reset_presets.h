// Which GEMM resets a rounding constant can replace (accel_round_preset.cc): a reset zeroes
// accumulator entries; any other instruction that reads or writes an entry (an ALU instruction, an
// accumulator LOAD) touches it, and a touched entry is no longer the reset's zero. An in-place ADD
// of an immediate can take the place of the resets before it when it adds to exactly the
// untouched entries of those resets: each of them whole, nothing else, no entry twice.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace loom::codegen::accel_backend {

class ResetPresets {
 public:
  // The reset at instruction `insn` zeroed `entries` (an entry a later reset zeroes again is that one's).
  void note_reset(size_t insn, std::vector<uint32_t> entries);
  // An instruction other than a GEMM update read or wrote `entries`.
  void touch(const std::vector<uint32_t>& entries);
  // The resets an in-place ADD over `added` can replace, in instruction order, and forgets their
  // entries; empty (and nothing forgotten) where the ADD must stay.
  std::vector<size_t> take(std::vector<uint32_t> added);

 private:
  std::map<uint32_t, size_t> zeroed_by_;                   // untouched entry -> the reset that zeroed it
  std::map<size_t, std::vector<uint32_t>> reset_entries_;  // reset instruction -> the entries it zeroes
};

}  // namespace loom::codegen::accel_backend
