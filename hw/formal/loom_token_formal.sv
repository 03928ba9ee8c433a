// Formal harness of the dependency tokens: a producer and a consumer sequencer (loom_seq, with
// 2-entry queues) joined by a loom_token_counter of 2 bits, so a full counter is reachable in a
// few cycles. Instructions arrive with arbitrary push/pop flags and datapaths finish at
// arbitrary times. Checks against a wider shadow count that the consumer pops only tokens that
// are there, the producer pushes only into room, the counter never wraps and its flags are right.
module loom_token_formal (
    input logic         clk,
    input logic         rst_n,
    input logic         p_push,   // an instruction for the producer's queue
    input logic [loom_accel_pkg::QUEUE_ENTRY_BITS-1:0] p_data,
    input logic         p_done,   // the producer's datapath finishes
    input logic         c_push,
    input logic [loom_accel_pkg::QUEUE_ENTRY_BITS-1:0] c_data,
    input logic         c_done,
    input logic         other_avail,  // the modules' other neighbours: anything
    input logic         other_room
);
  logic p_full, c_full, avail, room;
  loom_accel_pkg::tokens_t p_tokens, c_tokens;
  loom_accel_pkg::token_ops_t p_ops, c_ops;
  logic [loom_accel_pkg::INSN_BITS-1:0] p_insn, c_insn;
  logic [31:0] p_index, c_index, p_wait, c_wait;
  logic p_start, c_start, p_busy, c_busy, p_stalled, c_stalled, p_idle, c_idle;
  assign p_tokens.prev_avail = other_avail;
  assign p_tokens.next_avail = other_avail;
  assign p_tokens.prev_room = other_room;
  assign p_tokens.next_room = room;
  assign c_tokens.prev_avail = avail;
  assign c_tokens.next_avail = other_avail;
  assign c_tokens.prev_room = other_room;
  assign c_tokens.next_room = other_room;
  wire p_push_next = p_ops.push_next, c_pop_prev = c_ops.pop_prev;

  loom_seq #(
      .QueueDepth(2)
  ) producer (
      .clk_i       (clk),
      .rst_ni      (rst_n),
      .halt_i      (1'b0),
      .q_push_i    (p_push),
      .q_data_i    (p_data),
      .q_full_o    (p_full),
      .tokens_i    (p_tokens),
      .token_ops_o (p_ops),
      .exec_start_o(p_start),
      .insn_o      (p_insn),
      .index_o     (p_index),
      .exec_done_i (p_done),
      .busy_o      (p_busy),
      .stalled_o   (p_stalled),
      .idle_o      (p_idle),
      .wait_index_o(p_wait)
  );
  loom_seq #(
      .QueueDepth(2)
  ) consumer (
      .clk_i       (clk),
      .rst_ni      (rst_n),
      .halt_i      (1'b0),
      .q_push_i    (c_push),
      .q_data_i    (c_data),
      .q_full_o    (c_full),
      .tokens_i    (c_tokens),
      .token_ops_o (c_ops),
      .exec_start_o(c_start),
      .insn_o      (c_insn),
      .index_o     (c_index),
      .exec_done_i (c_done),
      .busy_o      (c_busy),
      .stalled_o   (c_stalled),
      .idle_o      (c_idle),
      .wait_index_o(c_wait)
  );
  loom_token_counter #(.Bits(2)) tokens (
      .clk_i(clk), .rst_ni(rst_n), .clear_i(1'b0), .enable_i(1'b1), .push_i(p_push_next), .pop_i(c_pop_prev),
      .avail_o(avail), .room_o(room));

  logic signed [3:0] shadow;  // tokens pushed minus tokens popped
  always_ff @(posedge clk) begin
    if (!rst_n) shadow <= '0;
    else shadow <= shadow + 4'(p_push_next) - 4'(c_pop_prev);
  end

  logic checking = 1'b0;
  initial assume (!rst_n);
  always_ff @(posedge clk) if (!rst_n) checking <= 1'b1;
  always_comb begin
    assume (!(p_push && p_full) && !(c_push && c_full));  // fetch fills a queue only when it has room
    if (checking && rst_n) begin
      assert (!c_pop_prev || avail);
      assert (!p_push_next || room);
      assert (shadow >= 0 && shadow <= 3);
      assert (avail == (shadow != 0));
      assert (room == (shadow != 3));
    end
  end
  wire unused = &{1'b0, p_ops.pop_prev, p_ops.pop_next, p_ops.push_prev, c_ops.pop_next, c_ops.push_prev, c_ops.push_next,
                  p_insn, c_insn,
                  p_index, c_index, p_wait, c_wait, p_start, c_start, p_busy, c_busy, p_stalled, c_stalled,
                  p_idle, c_idle};
endmodule
