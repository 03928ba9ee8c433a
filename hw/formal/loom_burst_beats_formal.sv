// Formal harness of a DMA burst's length, loom_burst_cap then loom_burst_beats as loom_burst_gen
// uses them: for every beat-aligned address and every number of beats left in the row, the next
// burst is 1..256 beats, stays inside its 4 KiB page (AXI4 forbids crossing), does not run past
// the row, is the longest burst that does all of that, and says whether it ends the row.
module loom_burst_beats_formal (
    input logic        clk,
    input logic [11:0] addr,
    input logic [31:0] left
);
  localparam int BusBytes = loom_accel_pkg::BUS_BYTES;
  logic [8:0] cap, beats;
  logic       ends_row;
  loom_burst_cap page (
      .addr_i(addr),
      .cap_o (cap)
  );
  loom_burst_beats dut (
      .cap_i     (cap),
      .left_i    (left),
      .beats_o   (beats),
      .ends_row_o(ends_row)
  );

  wire [31:0] page_beats = (32'd4096 - 32'(addr)) / 32'(BusBytes);
  wire [31:0] longest = left < page_beats ? (left < 32'd256 ? left : 32'd256)
                                          : (page_beats < 32'd256 ? page_beats : 32'd256);
  always_comb begin
    // a DMA asks only for a beat-aligned address, with at least one beat of the row left
    assume (32'(addr) % 32'(BusBytes) == 32'd0);
    assume (left >= 32'd1);
    assert (beats >= 9'd1 && beats <= 9'd256);
    assert (32'(addr) + 32'(beats) * 32'(BusBytes) <= 32'd4096);
    assert (32'(beats) <= left);
    assert (32'(beats) == longest);
    assert (ends_row == (32'(beats) == left));
  end
  wire unused_clk = clk;
endmodule
