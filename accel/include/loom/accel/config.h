// The accelerator configuration: the one source of truth for every size and width. The C++
// ISA, the simulators and the generated SystemVerilog package all derive from it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loom::accel {

struct AccelConfig {
  std::string name = "default";
  // GEMM core: BATCH x BLOCK_IN inputs times BLOCK_OUT x BLOCK_IN weights per cycle.
  int batch = 1, block_in = 16, block_out = 16;
  // Element widths in bits: inputs and weights 2, 4 or 8 each (sub-byte elements packed
  // little-endian within bytes: element k of an entry holds bits [k*w mod 8, +w) of its byte
  // k*w/8), outputs as wide as inputs (they are the next layer's inputs), accumulators 16 or 32
  // (sums wrap around at that width).
  int inp_bits = 8, wgt_bits = 8, acc_bits = 32, out_bits = 8;
  // On-chip buffer sizes in bytes.
  int64_t inp_buffer_bytes = 32 << 10, wgt_buffer_bytes = 256 << 10, acc_buffer_bytes = 128 << 10,
          out_buffer_bytes = 32 << 10, uop_buffer_bytes = 32 << 10;

  // A backend's settings for this design on one machine (a board's UIO device, an .xclbin path):
  // the config file's object-valued entries, by backend name, as JSON object text. They describe
  // where the hardware is, not what it is, so to_json and == leave them out (a model compiled with
  // one config runs under another file with the same fields and other settings).
  std::map<std::string, std::string> backend_sections;
  // ---- derived (all computed from the fields above) ----
  int inp_block_bytes() const { return batch * block_in * inp_bits / 8; }  // one input entry
  int wgt_block_bytes() const { return block_out * block_in * wgt_bits / 8; }
  int acc_block_bytes() const { return batch * block_out * acc_bits / 8; }
  int out_block_bytes() const { return batch * block_out * out_bits / 8; }
  static constexpr int kUopBytes = 4;
  int64_t inp_depth() const { return inp_buffer_bytes / inp_block_bytes(); }  // entries
  int64_t wgt_depth() const { return wgt_buffer_bytes / wgt_block_bytes(); }
  int64_t acc_depth() const { return acc_buffer_bytes / acc_block_bytes(); }
  int64_t out_depth() const { return out_buffer_bytes / out_block_bytes(); }
  int64_t uop_depth() const { return uop_buffer_bytes / kUopBytes; }
  // Index widths (bits) needed to address each buffer's entries.
  int inp_index_bits() const;
  int wgt_index_bits() const;
  int acc_index_bits() const;
  int out_index_bits() const;
  int uop_index_bits() const;
  int sram_index_bits() const;  // widest of the above: the SRAM base field of LOAD/STORE
  // 32-bit micro-op fields: dst indexes the accumulator; src the input (GEMM) or the
  // accumulator (ALU), so it is as wide as the wider of the two; wgt the weights.
  int uop_dst_bits() const { return acc_index_bits(); }
  int uop_src_bits() const;
  int uop_wgt_bits() const { return wgt_index_bits(); }
  int uop_bits() const { return uop_dst_bits() + uop_src_bits() + uop_wgt_bits(); }
  // Width of the hardware's AXI data bus in bytes: 16, or the smallest data entry when that is
  // narrower, so every inp/wgt/acc/out entry is a whole number of bus beats.
  int dram_bus_bytes() const;

  // Throws loom::ConfigError naming the field when the config is not realizable (non-power-of-two
  // blocks, buffers too small for one entry, fields that no longer fit the instruction word or
  // the 32-bit micro-op, unsupported widths or entries that are not whole bytes).
  void validate() const;

  // "W4A8, 32-bit accumulators": the weight and input (activation) widths, as designers name them.
  std::string precision() const;
  // Weight widths a layer may have on this design: wgt_bits, and (up to 8 bits) twice and four
  // times it, run as that many passes of wgt_bits-bit signed digits (w = sum_p d_p 2^(p wgt_bits),
  // each pass a GEMM into its own accumulators, combined by the ALU). A W4A8 design runs 8-bit
  // layers in two passes; a W2A8 one 4- and 8-bit layers in two and four.
  std::vector<int> weight_widths() const;
  // The weights `bits` wide (one of weight_widths) can hold: [lo, hi] = the sums of passes of
  // wgt_bits-bit digits (one pass: the plain signed range; two passes of 4 bits: [-136, 119]).
  std::pair<int64_t, int64_t> weight_range(int bits) const;
  // The same range for any digit width: values `bits` wide as passes of `digit_bits`-bit digits.
  static std::pair<int64_t, int64_t> digit_range(int digit_bits, int bits);
  // Every backend (fsim, perf, rtl, systemc) runs every legal precision; the accelerator
  // schedules (compiler, tuner, loom accel-run, loom dse) take narrow inputs, weights and outputs
  // but accumulate in 32 bits. ConfigError naming `who`, the config and its precision otherwise.
  void require_32bit_accumulators(const std::string& who) const;

  std::string to_json() const;  // the hardware fields (no backend sections)
  // Fields not given take the built-in default's values (a JSON object of overrides); unknown and
  // duplicate fields are errors naming the field. An object-valued entry is a backend section
  // (kept in backend_sections; which backends exist is the runtime's to check).
  static AccelConfig from_json(const std::string& json_text, const std::string& origin = "<string>");
  // A config file must give every field: a missing one is an error naming it (a hardware
  // description should not silently inherit sizes).
  static AccelConfig load(const std::string& path);
  bool operator==(const AccelConfig& o) const { return to_json() == o.to_json(); }
};

AccelConfig default_config();  // VTA's classic 1x16x16 int8 configuration

// For a config whose buffer indices overflow the instruction word or the micro-op: which buffer
// fields, each shrunk alone, make it fit, and the largest size of each that does.
std::string instruction_width_advice(const AccelConfig& c);

}  // namespace loom::accel
