// The register-tile search the conv schedules share (ops/src only): conv_nchw_tiling_for and
// nchwc_conv_tile differ only in which output-channel widths they offer.
#pragma once
#include <cstdint>
#include <vector>

namespace loom::ops::detail {

struct RegisterTile {
  int candidate = -1;  // index into the widths offered; -1: none fits the registers
  int x = 1;           // output columns
};

// `vectors[i]`: accumulator vectors per output column for width i, in increasing order. For each
// width, x columns with x * v accumulators leaving room for the v weight vectors and one broadcast
// (x * v <= registers - v - 1), x <= out_w, x need not divide out_w (partitioned loops). Cost: loads
// per multiply-add, (v + x) / (v * x), times the columns computed per column kept (a partial last
// tile). Ties: more accumulators; with `later_on_equal_accumulators`, then the wider width.
RegisterTile best_register_tile(const std::vector<int>& vectors, int registers, int64_t out_w,
                                bool later_on_equal_accumulators);

}  // namespace loom::ops::detail
