// Length of the next AXI4 INCR burst of a DMA row: from the beat-aligned address `addr_i` (its
// offset in the 4 KiB page is all that matters), with `left_i` beats of the row still to
// request: at most 256 beats, never across a 4 KiB boundary (AXI4 forbids it), never past the
// row. `ends_row_o` says the burst takes the rest of the row.
module loom_burst_beats #(
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES
) (
    input  logic [11:0] addr_i,
    input  logic [31:0] left_i,  // at least 1
    output logic [8:0]  beats_o,
    output logic        ends_row_o
);
  localparam int BusShift = $clog2(BusBytes);
  wire [12:0] to_4k = (13'h1000 - 13'(addr_i)) >> BusShift;  // beats to the page's end
  wire [8:0]  cap = to_4k < 13'd256 ? 9'(to_4k) : 9'd256;    // the longest burst here
  assign ends_row_o = left_i <= 32'(cap);
  assign beats_o = ends_row_o ? 9'(left_i) : cap;
endmodule
