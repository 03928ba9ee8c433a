// Formal harness of loom_fifo (bounded model check, hw/formal/run.sh): any sequence of pushes
// and pops, including a push while full and a pop while empty (dropped), against a reference
// queue. Checks the count, the flags and that the head is the oldest entry still queued. The
// FIFO never looks at its data, so 2-bit entries find any lost, repeated or reordered entry that
// wider ones would (and keep the unrolled problem small enough for the solver).
module loom_fifo_formal (
    input logic       clk,
    input logic       rst_n,
    input logic       push,
    input logic [1:0] din,
    input logic       pop
);
  localparam int Depth = 4;
  logic full, empty;
  logic [1:0] dout;
  logic [2:0] count;
  loom_fifo #(
      .Width(2),
      .Depth(Depth)
  ) dut (
      .clk_i  (clk),
      .rst_ni (rst_n),
      .push_i (push),
      .data_i (din),
      .full_o (full),
      .pop_i  (pop),
      .data_o (dout),
      .empty_o(empty),
      .count_o(count)
  );

  // reference: entries side by side, the head in the low bits
  logic [Depth*2-1:0] ref_q;
  logic [2:0] ref_n;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      ref_n <= '0;
    end else begin : model
      logic [Depth*2-1:0] q;
      logic [2:0] n;
      q = ref_q;
      n = ref_n;
      if (pop && ref_n != 0) begin
        q = q >> 2;
        n = n - 3'd1;
      end
      if (push && ref_n != 3'(Depth)) begin
        for (int i = 0; i < Depth; i++) if (n == 3'(i)) q[i*2+:2] = din;
        n = n + 3'd1;
      end
      ref_q <= q;
      ref_n <= n;
    end
  end

  logic checking = 1'b0;  // from the cycle after the first reset on
  initial assume (!rst_n);
  always_ff @(posedge clk) if (!rst_n) checking <= 1'b1;
  always_comb begin
    if (checking && rst_n) begin
      assert (count == ref_n);
      assert (empty == (ref_n == 0));
      assert (full == (ref_n == 3'(Depth)));
      if (ref_n != 0) assert (dout == ref_q[1:0]);
    end
  end
endmodule
