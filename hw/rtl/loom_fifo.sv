// Show-ahead FIFO: `dout` is the head entry whenever `empty` is low; `pop` removes it.
module loom_fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 16  // power of two
) (
    input  logic             clk,
    input  logic             rst_n,
    input  logic             push,
    input  logic [WIDTH-1:0] din,
    output logic             full,
    input  logic             pop,
    output logic [WIDTH-1:0] dout,
    output logic             empty,
    output logic [$clog2(DEPTH+1)-1:0] count
);
  localparam int PtrW = $clog2(DEPTH);
  logic [WIDTH-1:0] mem[DEPTH];
  logic [PtrW-1:0] rd_ptr, wr_ptr;

  assign empty = count == 0;
  assign full = count == ($clog2(DEPTH + 1))'(DEPTH);
  assign dout = mem[rd_ptr];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      rd_ptr <= '0;
      wr_ptr <= '0;
      count <= '0;
    end else begin
      if (push && !full) begin
        mem[wr_ptr] <= din;
        wr_ptr <= wr_ptr + 1'b1;
      end
      if (pop && !empty) rd_ptr <= rd_ptr + 1'b1;
      count <= count + ($clog2(DEPTH + 1))'(push && !full) - ($clog2(DEPTH + 1))'(pop && !empty);
    end
  end

`ifndef SYNTHESIS
  // Every user sizes its pushes and pops so that the FIFO neither overflows nor underflows (the
  // guards above would silently drop the entry or repeat the head).
  always_ff @(posedge clk) begin
    if (rst_n) begin
      assert (!(push && full)) else $error("loom_fifo: push while full (overflow)");
      assert (!(pop && empty)) else $error("loom_fifo: pop while empty (underflow)");
    end
  end
`endif
endmodule
