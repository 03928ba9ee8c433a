// The longest AXI4 INCR burst that may start at the beat-aligned address `addr_i` (its offset in
// the 4 KiB page is all that matters): to the page's end (AXI4 forbids crossing it), at most 256
// beats. loom_burst_beats cuts it to the row; loom_burst_gen keeps a register between the two.
module loom_burst_cap #(
    localparam int BusBytes = loom_accel_pkg::BUS_BYTES
) (
    input  logic [11:0] addr_i,
    output logic [8:0]  cap_o
);
  localparam int BusShift = $clog2(BusBytes);
  localparam int PageBeats = 4096 / BusBytes;
  wire [12:0] to_page = 13'(PageBeats) - 13'(addr_i[11:BusShift]);
  assign cap_o = to_page[12:8] != '0 ? 9'd256 : 9'(to_page);
  wire unused_ok = &{1'b0, addr_i};  // the offset in the beat (aligned)
endmodule
