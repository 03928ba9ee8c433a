// Formal harness of the dependency tokens: a producer and a consumer sequencer (loom_seq, with
// 2-entry queues) joined by a loom_token_counter of 2 bits, so a full counter is reachable in a
// few cycles. Instructions arrive with arbitrary push/pop flags and datapaths finish at
// arbitrary times. Checks against a wider shadow count that the consumer pops only tokens that
// are there, the producer pushes only into room, the counter never wraps and its flags are right.
module loom_token_formal (
    input logic         clk,
    input logic         rst_n,
    input logic         p_push,   // an instruction for the producer's queue
    input logic [159:0] p_data,
    input logic         p_done,   // the producer's datapath finishes
    input logic         c_push,
    input logic [159:0] c_data,
    input logic         c_done,
    input logic         other_avail,  // the modules' other neighbours: anything
    input logic         other_room
);
  logic p_full, c_full, avail, room;
  logic p_push_next, c_pop_prev;
  logic p_pop_prev, p_pop_next, p_push_prev, c_pop_next, c_push_prev, c_push_next;
  logic [127:0] p_insn, c_insn;
  logic [31:0] p_index, c_index, p_wait, c_wait;
  logic p_start, c_start, p_busy, c_busy, p_stalled, c_stalled, p_idle, c_idle;

  loom_seq #(.QUEUE_DEPTH(2)) producer (
      .clk, .rst_n, .halt(1'b0), .q_push(p_push), .q_data(p_data), .q_full(p_full),
      .prev_avail(other_avail), .next_avail(other_avail), .prev_room(other_room), .next_room(room),
      .pop_prev(p_pop_prev), .pop_next(p_pop_next), .push_prev(p_push_prev), .push_next(p_push_next),
      .exec_start(p_start), .cur_insn(p_insn), .cur_index(p_index), .exec_done(p_done),
      .busy(p_busy), .stalled(p_stalled), .idle(p_idle), .wait_index(p_wait));
  loom_seq #(.QUEUE_DEPTH(2)) consumer (
      .clk, .rst_n, .halt(1'b0), .q_push(c_push), .q_data(c_data), .q_full(c_full),
      .prev_avail(avail), .next_avail(other_avail), .prev_room(other_room), .next_room(other_room),
      .pop_prev(c_pop_prev), .pop_next(c_pop_next), .push_prev(c_push_prev), .push_next(c_push_next),
      .exec_start(c_start), .cur_insn(c_insn), .cur_index(c_index), .exec_done(c_done),
      .busy(c_busy), .stalled(c_stalled), .idle(c_idle), .wait_index(c_wait));
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
  wire unused = &{1'b0, p_pop_prev, p_pop_next, p_push_prev, c_pop_next, c_push_prev, c_push_next, p_insn, c_insn,
                  p_index, c_index, p_wait, c_wait, p_start, c_start, p_busy, c_busy, p_stalled, c_stalled,
                  p_idle, c_idle};
endmodule
