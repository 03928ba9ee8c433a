// On-chip scratchpad: one synchronous write port and NumRd synchronous read ports (data one
// cycle after the address; reading the entry being written returns the old value). Read ports
// are packed side by side: port p uses raddr_i[p*AW +: AW] and rdata_o[p*Width +: Width].
module loom_sram #(
    parameter int Width = 8,
    parameter int Depth = 16,
    parameter int NumRd = 1,
    localparam int AW = $clog2(Depth)
) (
    input  logic                   clk_i,
    input  logic                   we_i,
    input  logic [AW-1:0]          waddr_i,
    input  logic [Width-1:0]       wdata_i,
    input  logic [NumRd*AW-1:0]    raddr_i,
    output logic [NumRd*Width-1:0] rdata_o
);
  logic [Width-1:0] mem_q[Depth]  /*verilator public_flat_rd*/;  // read by the simulators' commit records

  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
  end
  for (genvar p = 0; p < NumRd; p++) begin : g_rd
    always_ff @(posedge clk_i) rdata_o[p*Width+:Width] <= mem_q[raddr_i[p*AW+:AW]];
  end
endmodule
