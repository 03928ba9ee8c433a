// Consistency checks on the generated parameter package (loom hw-params): the RTL's view of the
// accelerator config. `ok` is a constant the lint/synthesis flows evaluate; it is 1 for every
// config the C++ side accepts.
module loom_accel_pkg_check (
    output logic ok
);
  import loom_accel_pkg::*;

  localparam bit UopFits = (UOP_DST_BITS + UOP_SRC_BITS + UOP_WGT_BITS) <= 32;
  localparam bit IndexWidthsCoverDepths = ((1 << INP_IDX_BITS) >= INP_DEPTH) && ((1 << WGT_IDX_BITS) >= WGT_DEPTH) &&
                                          ((1 << ACC_IDX_BITS) >= ACC_DEPTH) && ((1 << UOP_IDX_BITS) >= UOP_DEPTH);
  localparam bit EntriesMatchBlocks = (INP_ENTRY_BYTES * 8 == BATCH * BLOCK_IN * INP_WIDTH) &&
                                      (WGT_ENTRY_BYTES * 8 == BLOCK_OUT * BLOCK_IN * WGT_WIDTH) &&
                                      (ACC_ENTRY_BYTES * 8 == BATCH * BLOCK_OUT * ACC_WIDTH);

  assign ok = UopFits && IndexWidthsCoverDepths && EntriesMatchBlocks;
endmodule
