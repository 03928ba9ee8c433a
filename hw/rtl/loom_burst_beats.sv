// Length of the next AXI4 INCR burst of a DMA row: from the beat-aligned `addr` towards
// `end_byte`, at most 256 beats and never across a 4 KiB boundary (AXI4 forbids it).
module loom_burst_beats #(
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES
) (
    input  logic [63:0] addr,
    input  logic [63:0] end_byte,
    output logic [8:0]  beats
);
  localparam int BusShift = $clog2(BusBytes);
  wire [63:0] left_beats = (end_byte - addr + 64'(BusBytes) - 64'd1) >> BusShift;  // a partial last beat counts
  wire [12:0] to_4k_beats = 13'((13'h1000 - 13'(addr[11:0])) >> BusShift);
  always_comb begin
    beats = 9'd256;
    if (left_beats < 64'(beats)) beats = 9'(left_beats);
    if (to_4k_beats < 13'(beats)) beats = 9'(to_4k_beats);
  end
endmodule
