// On-chip scratchpad: one synchronous write port and NUM_RD synchronous read ports (data one
// cycle after the address; reading the entry being written returns the old value). Read ports
// are packed side by side: port p uses raddr[p*AW +: AW] and rdata[p*WIDTH +: WIDTH].
module loom_sram #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 16,
    parameter int NUM_RD = 1,
    localparam int AW = $clog2(DEPTH)
) (
    input  logic                    clk,
    input  logic                    we,
    input  logic [AW-1:0]           waddr,
    input  logic [WIDTH-1:0]        wdata,
    input  logic [NUM_RD*AW-1:0]    raddr,
    output logic [NUM_RD*WIDTH-1:0] rdata
);
  logic [WIDTH-1:0] mem[DEPTH];

  always_ff @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
  end
  for (genvar p = 0; p < NUM_RD; p++) begin : g_rd
    always_ff @(posedge clk) rdata[p*WIDTH+:WIDTH] <= mem[raddr[p*AW+:AW]];
  end
endmodule
