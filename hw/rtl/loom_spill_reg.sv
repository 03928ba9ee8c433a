// Spill register: a valid/ready stage with both directions registered, so no combinational path
// crosses it (neither valid/data forward nor ready backward). Two entries keep full throughput:
// the second catches the item that arrives while the output is stalled, and ready_o falls only
// once it is occupied. The output obeys AXI's rules: valid_o stays high with data_o unchanged
// until ready_i takes it.
module loom_spill_reg #(
    parameter int Width = 8
) (
    input  logic             clk_i,
    input  logic             rst_ni,
    input  logic             valid_i,
    output logic             ready_o,
    input  logic [Width-1:0] data_i,
    output logic             valid_o,
    input  logic             ready_i,
    output logic [Width-1:0] data_o
);
  logic             out_valid_q, spill_valid_q;
  logic [Width-1:0] out_data_q, spill_data_q;

  assign ready_o = !spill_valid_q;
  assign valid_o = out_valid_q;
  assign data_o  = out_data_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      out_valid_q   <= 1'b0;
      spill_valid_q <= 1'b0;
    end else if (!out_valid_q || ready_i) begin
      // The output register moves on: it takes the spilled item first (the input is not
      // accepted then, ready_o being low), else the input.
      out_valid_q   <= spill_valid_q || valid_i;
      out_data_q    <= spill_valid_q ? spill_data_q : data_i;
      spill_valid_q <= 1'b0;
    end else if (valid_i && !spill_valid_q) begin
      spill_valid_q <= 1'b1;
      spill_data_q  <= data_i;
    end
  end
endmodule
