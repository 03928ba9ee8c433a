// Show-ahead FIFO: `data_o` is the head entry whenever `empty_o` is low; `pop_i` removes it.
module loom_fifo #(
    parameter int Width = 8,
    parameter int Depth = 16,  // power of two
    localparam int CountW = $clog2(Depth + 1)
) (
    input  logic              clk_i,
    input  logic              rst_ni,
    input  logic              push_i,
    input  logic [Width-1:0]  data_i,
    output logic              full_o,
    input  logic              pop_i,
    output logic [Width-1:0]  data_o,
    output logic              empty_o,
    output logic [CountW-1:0] count_o
);
  localparam int PtrW = $clog2(Depth);
  logic [Width-1:0] mem_q[Depth];
  logic [PtrW-1:0]  rd_ptr_q, wr_ptr_q;

  assign empty_o = count_o == 0;
  assign full_o = count_o == CountW'(Depth);
  assign data_o = mem_q[rd_ptr_q];

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rd_ptr_q <= '0;
      wr_ptr_q <= '0;
      count_o <= '0;
    end else begin
      if (push_i && !full_o) begin
        mem_q[wr_ptr_q] <= data_i;
        wr_ptr_q <= wr_ptr_q + 1'b1;
      end
      if (pop_i && !empty_o) rd_ptr_q <= rd_ptr_q + 1'b1;
      count_o <= count_o + CountW'(push_i && !full_o) - CountW'(pop_i && !empty_o);
    end
  end

`ifndef SYNTHESIS
  // Every user sizes its pushes and pops so that the FIFO neither overflows nor underflows (the
  // guards above would silently drop the entry or repeat the head); the flags are known.
  always_ff @(posedge clk_i) begin
    if (rst_ni) begin
      assert (!(push_i && full_o)) else $error("loom_fifo: push while full (overflow)");
      assert (!(pop_i && empty_o)) else $error("loom_fifo: pop while empty (underflow)");
      assert (!$isunknown({push_i, pop_i})) else $error("loom_fifo: push or pop unknown (X)");
    end
  end
  // Functional coverage (Verilator --coverage-user; one point per instance): the queue filled up,
  // and a pop emptied it.
  c_full: cover property (@(posedge clk_i) disable iff (!rst_ni) full_o);
  c_drained: cover property (@(posedge clk_i) disable iff (!rst_ni) pop_i && !push_i && count_o == CountW'(1));
`endif
endmodule
