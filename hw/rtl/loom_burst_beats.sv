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
  localparam int PageBeats = 4096 / BusBytes;
  localparam int BeatW = 12 - BusShift;
  // Beats to the page's end (at most 256 when the bus is 16 bytes, more on a narrower one), each
  // compare as narrow as its operands: this sits between two registers of loom_burst_gen.
  wire [BeatW-1:0] beat_in_page = addr_i[11:BusShift];
  wire [12:0] to_4k = 13'(PageBeats) - 13'(beat_in_page);
  wire [8:0] cap = PageBeats > 256 && 32'(beat_in_page) <= 32'(PageBeats - 256) ? 9'd256 : 9'(to_4k);
  assign ends_row_o = left_i[31:9] == '0 && left_i[8:0] <= cap;
  assign beats_o = ends_row_o ? left_i[8:0] : cap;
  wire unused_ok = &{1'b0, addr_i, to_4k};  // the offset in the beat (aligned), to_4k above the cap
endmodule
