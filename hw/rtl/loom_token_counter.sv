// A dependency-token counter between two modules: the producer pushes a token when an
// instruction that signals the other module retires, the consumer pops one before an
// instruction that waits on it starts. The sequencers pop only when `avail_o` and push only when
// `room_o`, so the count never wraps (checked formally, hw/formal/, and by the assertions below
// in simulation). `clear_i` (a new run) empties it; it counts only while `enable_i` (running).
module loom_token_counter #(
    parameter int Bits = 16
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic clear_i,
    input  logic enable_i,
    input  logic push_i,
    input  logic pop_i,
    output logic avail_o,  // a token is there to pop
    output logic room_o    // a push fits
);
  logic [Bits-1:0] count_q  /*verilator public_flat_rd*/;  // read by the simulators' commit records

  always_ff @(posedge clk_i) begin
    if (!rst_ni || clear_i) count_q <= '0;
    // the count one up and one down side by side: push and pop only select
    else if (enable_i && push_i && !pop_i) count_q <= count_q + Bits'(1);
    else if (enable_i && pop_i && !push_i) count_q <= count_q - Bits'(1);
  end

  assign avail_o = count_q != '0;
  assign room_o = count_q != '1;

`ifndef SYNTHESIS
  always_ff @(posedge clk_i) begin
    if (rst_ni && !clear_i && enable_i) begin
      assert (!(pop_i && !avail_o)) else $error("token underflow: a module popped a token that is not there");
      assert (!(push_i && !room_o)) else $error("token overflow: a module pushed into a full counter");
    end
  end
  // Functional coverage: a token handed over in the cycle another is taken, and tokens piling up
  // (the producer runs ahead of the consumer by two or more instructions).
  c_push_and_pop: cover property (@(posedge clk_i) disable iff (!rst_ni || clear_i) enable_i && push_i && pop_i);
  c_two_waiting: cover property (@(posedge clk_i) disable iff (!rst_ni || clear_i) count_q >= Bits'(2));
`endif
endmodule
