// Instruction queue and sequencer shared by the load, compute and store modules: takes the
// instruction at the head of the module's queue once the dependency tokens it pops are available,
// starts the datapath, and after the datapath reports done pushes its tokens (waiting for room).
module loom_seq #(
    parameter int QUEUE_DEPTH = 32
) (
    input  logic clk,
    input  logic rst_n,
    input  logic halt,  // a fault anywhere: stop taking instructions
    // instruction queue, filled by fetch: {index, instruction}
    input  logic         q_push,
    input  logic [159:0] q_data,
    output logic         q_full,
    // tokens
    input  logic prev_avail,  // a token from the previous module is waiting
    input  logic next_avail,
    input  logic prev_room,   // the token queue to the previous module is not full
    input  logic next_room,
    output logic pop_prev,    // strobes
    output logic pop_next,
    output logic push_prev,
    output logic push_next,
    // datapath
    output logic         exec_start,  // pulse; cur_insn is valid from this cycle on
    output logic [127:0] cur_insn,
    output logic [31:0]  cur_index,
    input  logic         exec_done,
    // status
    output logic        busy,     // executing (or finishing) an instruction
    output logic        stalled,  // an instruction waits for a dependency token (or token room)
    output logic        idle,     // nothing to do
    output logic [31:0] wait_index
);
  localparam int PopPrev = loom_accel_pkg::MEM_POP_PREV_LSB, PopNext = loom_accel_pkg::MEM_POP_NEXT_LSB;
  localparam int PushPrev = loom_accel_pkg::MEM_PUSH_PREV_LSB, PushNext = loom_accel_pkg::MEM_PUSH_NEXT_LSB;
  typedef enum logic [1:0] {
    Idle,
    Exec,
    Push
  } state_t;
  state_t state;

  logic q_empty, q_pop;
  logic [159:0] q_head;
  logic [$clog2(QUEUE_DEPTH+1)-1:0] q_count;
  loom_fifo #(.WIDTH(160), .DEPTH(QUEUE_DEPTH)) queue (
      .clk, .rst_n, .push(q_push), .din(q_data), .full(q_full), .pop(q_pop), .dout(q_head), .empty(q_empty), .count(q_count));
  wire unused_count = &{1'b0, q_count};

  wire [127:0] head = q_head[127:0];
  wire tokens_ok = (!head[PopPrev] || prev_avail) && (!head[PopNext] || next_avail);
  wire room_ok = (!cur_insn[PushPrev] || prev_room) && (!cur_insn[PushNext] || next_room);
  wire take = state == Idle && !q_empty && tokens_ok && !halt;
  wire finish = (state == Exec && exec_done) || state == Push;

  assign q_pop = take;
  assign pop_prev = take && head[PopPrev];
  assign pop_next = take && head[PopNext];
  assign push_prev = finish && room_ok && cur_insn[PushPrev];
  assign push_next = finish && room_ok && cur_insn[PushNext];
  assign busy = state != Idle;
  assign stalled = (state == Idle && !q_empty && !tokens_ok) || (finish && !room_ok);
  assign idle = state == Idle && q_empty;
  assign wait_index = state == Idle ? q_head[159:128] : cur_index;

  always_ff @(posedge clk) begin
    exec_start <= 1'b0;
    if (!rst_n) begin
      state <= Idle;
    end else begin
      case (state)
        Idle:
        if (take) begin
          state <= Exec;
          cur_insn <= head;
          cur_index <= q_head[159:128];
          exec_start <= 1'b1;
        end
        Exec, Push: if (finish) state <= room_ok ? Idle : Push;
        default: state <= Idle;
      endcase
    end
  end
endmodule
