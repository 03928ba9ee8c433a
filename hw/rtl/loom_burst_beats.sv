// Length of the next AXI4 INCR burst of a DMA row: the longest burst allowed where it starts
// (`cap_i`, from loom_burst_cap: 1..256 beats, inside the 4 KiB page), cut to the `left_i` beats
// of the row still to request (at least 1). `ends_row_o` says it takes the rest of the row.
module loom_burst_beats #(
    parameter int LeftW = 32  // wide enough for a row's beats (more than 9 bits)
) (
    input  logic [8:0]       cap_i,
    input  logic [LeftW-1:0] left_i,
    output logic [8:0]  beats_o,
    output logic        ends_row_o
);
  assign ends_row_o = left_i[LeftW-1:9] == '0 && left_i[8:0] <= cap_i;
  assign beats_o = ends_row_o ? left_i[8:0] : cap_i;
endmodule
