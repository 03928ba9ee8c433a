// Formal harness of loom_burst_beats: for every beat-aligned address and row end, the next
// burst is 1..256 beats, stays inside its 4 KiB page (AXI4 forbids crossing), and does not
// start a beat past the row's last byte; it is the longest burst that does all of that.
module loom_burst_beats_formal (
    input logic        clk,
    input logic [63:0] addr,
    input logic [63:0] end_byte
);
  localparam int BusBytes = loom_accel_pkg::BUS_BYTES;
  logic [8:0] beats;
  loom_burst_beats dut (.addr, .end_byte, .beats);

  wire [63:0] left = end_byte - addr;                                   // bytes still to read
  wire [63:0] left_beats = (left + 64'(BusBytes) - 64'd1) / 64'(BusBytes);
  wire [63:0] page_beats = (64'd4096 - 64'(addr[11:0])) / 64'(BusBytes);
  wire [63:0] longest = left_beats < page_beats ? (left_beats < 64'd256 ? left_beats : 64'd256)
                                                : (page_beats < 64'd256 ? page_beats : 64'd256);
  always_comb begin
    // a DMA asks only for a beat-aligned address below the row's end, with less than 2^48 left
    assume (addr % 64'(BusBytes) == 64'd0);
    assume (end_byte > addr && left < 64'h1_0000_0000_0000);
    assert (beats >= 9'd1 && beats <= 9'd256);
    assert (64'(addr[11:0]) + 64'(beats) * 64'(BusBytes) <= 64'd4096);
    assert (64'(beats - 9'd1) * 64'(BusBytes) < left);
    assert (64'(beats) == longest);
  end
  wire unused_clk = clk;
endmodule
