// Instruction queue and sequencer shared by the load, compute and store modules: takes the
// instruction at the head of the module's queue once the dependency tokens it pops are available,
// starts the datapath, and after the datapath reports done pushes its tokens (waiting for room).
module loom_seq #(
    parameter int QueueDepth = 32
) (
    input  logic clk_i,
    input  logic rst_ni,
    input  logic halt_i,  // a fault anywhere: stop taking instructions
    // instruction queue, filled by fetch
    input  logic                          q_push_i,
    input  loom_accel_pkg::queue_entry_t  q_data_i,
    output logic                          q_full_o,
    // tokens
    input  loom_accel_pkg::tokens_t    tokens_i,
    output loom_accel_pkg::token_ops_t token_ops_o,  // strobes
    // datapath
    output logic                                 exec_start_o,  // pulse; insn_o is valid from this cycle on
    output logic [loom_accel_pkg::INSN_BITS-1:0] insn_o,
    output logic [31:0]                          index_o,
    input  logic                                 exec_done_i,
    // status
    output logic        busy_o,     // executing (or finishing) an instruction
    output logic        stalled_o,  // an instruction waits for a dependency token (or token room)
    output logic        idle_o,     // nothing to do
    output logic [31:0] wait_index_o
);
  localparam int PopPrev = loom_accel_pkg::MEM_POP_PREV_LSB, PopNext = loom_accel_pkg::MEM_POP_NEXT_LSB;
  localparam int PushPrev = loom_accel_pkg::MEM_PUSH_PREV_LSB, PushNext = loom_accel_pkg::MEM_PUSH_NEXT_LSB;
  typedef enum logic [1:0] {
    Idle,
    Exec,
    Push
  } state_e;
  state_e state_q;

  logic q_empty, q_pop;
  loom_accel_pkg::queue_entry_t q_head;
  // The head instruction in a register: its token flags and the token counters are all that
  // stand between two registers and the decision to take it.
  logic                         head_valid_q;
  loom_accel_pkg::queue_entry_t head_q;
  logic [$clog2(QueueDepth+1)-1:0] q_count;
  loom_fifo #(
      .Width(loom_accel_pkg::QUEUE_ENTRY_BITS),
      .Depth(QueueDepth)
  ) queue (
      .clk_i,
      .rst_ni,
      .push_i (q_push_i),
      .data_i (q_data_i),
      .full_o (q_full_o),
      .pop_i  (q_pop),
      .data_o (q_head),
      .empty_o(q_empty),
      .count_o(q_count)
  );
  wire unused_count = &{1'b0, q_count};

  wire tokens_ok = (!head_q.insn[PopPrev] || tokens_i.prev_avail) && (!head_q.insn[PopNext] || tokens_i.next_avail);
  wire room_ok = (!insn_o[PushPrev] || tokens_i.prev_room) && (!insn_o[PushNext] || tokens_i.next_room);
  wire take = state_q == Idle && head_valid_q && tokens_ok && !halt_i;
  wire finish = (state_q == Exec && exec_done_i) || state_q == Push;

  assign q_pop = !q_empty && (!head_valid_q || take);
  assign token_ops_o.pop_prev = take && head_q.insn[PopPrev];
  assign token_ops_o.pop_next = take && head_q.insn[PopNext];
  assign token_ops_o.push_prev = finish && room_ok && insn_o[PushPrev];
  assign token_ops_o.push_next = finish && room_ok && insn_o[PushNext];
  assign busy_o = state_q != Idle;
  assign stalled_o = (state_q == Idle && head_valid_q && !tokens_ok) || (finish && !room_ok);
  assign idle_o = state_q == Idle && !head_valid_q && q_empty;
  assign wait_index_o = state_q == Idle ? head_q.index : index_o;

  always_ff @(posedge clk_i) begin
    exec_start_o <= 1'b0;
    if (q_pop) head_q <= q_head;
    if (!rst_ni) begin
      state_q <= Idle;
      head_valid_q <= 1'b0;
    end else begin
      head_valid_q <= q_pop || (head_valid_q && !take);
      unique case (state_q)
        Idle:
        if (take) begin
          state_q <= Exec;
          insn_o <= head_q.insn;
          index_o <= head_q.index;
          exec_start_o <= 1'b1;
        end
        Exec, Push: if (finish) state_q <= room_ok ? Idle : Push;
        // every state is named above: a default arm that no run can reach (waived from coverage)
        /*verilator coverage_off*/
        default: state_q <= Idle;
        /*verilator coverage_on*/
      endcase
    end
  end

`ifndef SYNTHESIS
  // A datapath reports done only for the instruction it runs.
  always_ff @(posedge clk_i) begin
    if (rst_ni) assert (!exec_done_i || state_q == Exec) else $error("loom_seq: done without an instruction");
  end
`endif
endmodule
