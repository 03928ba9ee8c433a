// The compute core: runs a GEMM or ALU instruction's micro-ops inside its two-level loop, one
// micro-op iteration per cycle (two for an ALU op with a register operand).
//   S0  issue: loop counters, running index offsets, micro-op read
//   S1  index: micro-op fields + offsets, range checks, scratchpad reads
//   S2  math:  BATCH x BLOCK_OUT dot products of BLOCK_IN (GEMM) or BATCH x BLOCK_OUT ALU ops
//   S3  write: accumulator entry and its low bits into the out buffer
// The accumulator has one read port (so it maps onto simple dual-port BRAM, not two copies): an
// ALU iteration with a register operand stays two cycles in S1, reading the operand first and
// then the destination, as VTA's ALU does (II = 2).
// Accumulator reads in S1 miss the writes of the iterations ahead (S2, S3), so S2 forwards
// them: consecutive micro-ops that accumulate into one entry run back to back without stalls.
module loom_gemm_alu #(
    localparam int Batch = loom_accel_pkg::BATCH,
    localparam int BlockIn = loom_accel_pkg::BLOCK_IN,
    localparam int BlockOut = loom_accel_pkg::BLOCK_OUT,
    localparam int InpW = loom_accel_pkg::INP_WIDTH,
    localparam int WgtW = loom_accel_pkg::WGT_WIDTH,
    localparam int AccW = loom_accel_pkg::ACC_WIDTH,
    localparam int OutW = loom_accel_pkg::OUT_WIDTH,
    localparam int UopAW = loom_accel_pkg::UOP_IDX_BITS,
    localparam int InpAW = loom_accel_pkg::INP_IDX_BITS,
    localparam int WgtAW = loom_accel_pkg::WGT_IDX_BITS,
    localparam int AccAW = loom_accel_pkg::ACC_IDX_BITS,
    localparam int OutAW = loom_accel_pkg::OUT_IDX_BITS,
    localparam int InpEW = Batch * BlockIn * InpW,
    localparam int WgtEW = BlockOut * BlockIn * WgtW,
    localparam int AccEW = Batch * BlockOut * AccW,
    localparam int OutEW = Batch * BlockOut * OutW,
    // Two int8 products per multiplier (mul2_shared below): half the DSPs, same results.
    parameter bit DspPack = loom_accel_pkg::GEMM_DSP_PACK
) (
    input  logic clk,
    input  logic rst_n,
    // command (held stable while busy)
    input  logic        start,
    input  logic        is_alu,
    input  logic        reset_acc,  // GEMM: zero the accumulators
    input  logic [31:0] uop_begin,
    input  logic [31:0] uop_end,
    input  logic [15:0] iter_out,
    input  logic [15:0] iter_in,
    input  logic [31:0] dst_factor_out,
    input  logic [31:0] dst_factor_in,
    input  logic [31:0] src_factor_out,
    input  logic [31:0] src_factor_in,
    input  logic [31:0] wgt_factor_out,
    input  logic [31:0] wgt_factor_in,
    input  logic [2:0]  alu_op,
    input  logic        use_imm,
    input  logic [15:0] imm,
    output logic        done,
    output logic        fault,
    output logic [7:0]  fault_code,
    output logic        mac_step,  // a GEMM iteration (BATCH*BLOCK_IN*BLOCK_OUT MACs) this cycle
    output logic        alu_step,  // an ALU iteration (BATCH*BLOCK_OUT ops) this cycle
    // scratchpads
    output logic [UopAW-1:0] uop_raddr,
    input  logic [31:0]      uop_rdata,
    output logic [InpAW-1:0] inp_raddr,
    input  logic [InpEW-1:0] inp_rdata,
    output logic [WgtAW-1:0] wgt_raddr,
    input  logic [WgtEW-1:0] wgt_rdata,
    output logic [AccAW-1:0] acc_raddr,
    input  logic [AccEW-1:0] acc_rdata,
    output logic             acc_we,
    output logic [AccAW-1:0] acc_waddr,
    output logic [AccEW-1:0] acc_wdata,
    output logic             out_we,
    output logic [OutAW-1:0] out_waddr,
    output logic [OutEW-1:0] out_wdata
);
  localparam int DstW = loom_accel_pkg::UOP_DST_BITS, SrcW = loom_accel_pkg::UOP_SRC_BITS, WgtFW = loom_accel_pkg::UOP_WGT_BITS;
  localparam int Elems = Batch * BlockOut;
  wire unused_uop_bits = &{1'b0, uop_rdata};  // bits above the micro-op fields

  // ---- S0: issue ----
  logic        issuing;
  logic [31:0] u;
  logic [15:0] o, n;
  logic [31:0] dst_o, dst_n, src_o, src_n, wgt_o, wgt_n;  // running o*factor_out and n*factor_in
  wire last_u = u == uop_end - 32'd1, last_n = n == iter_in - 16'd1, last_o = o == iter_out - 16'd1;
  assign uop_raddr = UopAW'(u);

  // ---- S1: index ----
  // An ALU iteration with a register operand spends two cycles here: the first (s1_second low)
  // reads the operand and keeps its indices, which the micro-op read port no longer holds in the
  // second, when the destination is read.
  wire         two_reads = is_alu && !use_imm;
  logic        s1_valid, s1_second;
  logic [31:0] s1_dst_off, s1_src_off, s1_wgt_off;
  logic [AccAW-1:0] s1_dst_q, s1_src_q;
  wire  [31:0] s1_dst = 32'(uop_rdata[DstW-1:0]) + s1_dst_off;
  wire  [31:0] s1_src = 32'(uop_rdata[DstW+:SrcW]) + s1_src_off;
  wire  [31:0] s1_wgt = 32'(uop_rdata[DstW+SrcW+:WgtFW]) + s1_wgt_off;
  wire  [31:0] src_depth = is_alu ? 32'(loom_accel_pkg::ACC_DEPTH) : 32'(loom_accel_pkg::INP_DEPTH);
  wire s1_bad = s1_valid && !s1_second &&
                (s1_dst >= 32'(loom_accel_pkg::ACC_DEPTH) || s1_src >= src_depth ||
                 (!is_alu && !reset_acc && s1_wgt >= 32'(loom_accel_pkg::WGT_DEPTH)));
  wire s1_first_of_two = s1_valid && two_reads && !s1_second;  // S1 holds, S0 stalls
  assign inp_raddr = InpAW'(s1_src);
  assign wgt_raddr = WgtAW'(s1_wgt);
  assign acc_raddr = s1_second ? s1_dst_q : s1_first_of_two ? AccAW'(s1_src) : AccAW'(s1_dst);

  // ---- S2: math; S3: write ----
  logic             s2_valid, s3_valid, w_valid;
  logic [AccAW-1:0] s2_dst, s2_src, s3_dst, w_dst;
  logic [AccEW-1:0] s3_data, w_data, src_q;

  // The accumulator entry `a` as seen after the writes still in flight.
  function automatic logic [AccEW-1:0] forwarded(input logic [AccAW-1:0] a, input logic [AccEW-1:0] from_sram);
    if (s3_valid && s3_dst == a) forwarded = s3_data;
    else if (w_valid && w_dst == a) forwarded = w_data;
    else forwarded = from_sram;
  endfunction

  // Two signed int8 products that share the operand b, {a_hi*b, a_lo*b}, from one multiplier that
  // fits a DSP48E1 (25 x 18) or DSP48E2 (27 x 18): p = (a_hi * 2^16 + a_lo) * b. The low product
  // lies in [-16256, 16384], so p[15:0] is exactly a_lo*b; the bits above hold a_hi*b minus one
  // when the low product is negative (its sign borrowed from them), and adding p[15] back corrects
  // that. yosys puts the a_hi * 2^16 + a_lo add into the DSP's pre-adder.
  function automatic logic [31:0] mul2_shared(input logic signed [7:0] a_hi, input logic signed [7:0] a_lo,
                                              input logic signed [7:0] b);
    logic signed [24:0] a_packed;
    logic signed [31:0] p;  // |a_packed * b| < 2^31
    a_packed = $signed({a_hi[7], a_hi, 16'b0}) + $signed({{17{a_lo[7]}}, a_lo});
    p = a_packed * b;
    mul2_shared = {p[31:16] + {15'b0, p[15]}, p[15:0]};
  endfunction

  // The product of output lane `col` (of BLOCK_OUT) and input q (x), weights read from wgt_rdata
  // in place (a vector argument would be copied per call in the Verilated model):
  // with DspPack, lanes 2k and 2k+1 share their input, so each pair's two products come out of one
  // mul2_shared (the same expression for both lanes; synthesis merges the two into one DSP).
  function automatic logic signed [15:0] gemm_product(input int col, input logic signed [7:0] x, input int q);
    logic [31:0] pair;
    if (DspPack && BlockOut > 1) begin
      pair = mul2_shared(wgt_rdata[((col | 1) * BlockIn + q)*WgtW+:WgtW], wgt_rdata[((col & ~1) * BlockIn + q)*WgtW+:WgtW],
                         x);
      gemm_product = col % 2 == 1 ? pair[31:16] : pair[15:0];
    end else begin
      gemm_product = $signed(wgt_rdata[(col * BlockIn + q)*WgtW+:WgtW]) * x;
    end
  endfunction

  function automatic logic signed [AccW-1:0] alu_apply(input logic [2:0] op, input logic signed [AccW-1:0] a,
                                                        input logic signed [AccW-1:0] b);
    // The decoder (loom_fetch) faults on any other op before it reaches the core; the
    // assertion below says so in simulation, and synthesis may treat the rest as don't-care.
    unique case (op)
      loom_accel_pkg::ALU_MIN: alu_apply = a < b ? a : b;
      loom_accel_pkg::ALU_MAX: alu_apply = a > b ? a : b;
      loom_accel_pkg::ALU_ADD: alu_apply = a + b;
      loom_accel_pkg::ALU_SHR:
        // negative amounts shift left; amounts saturate at 31 either way
        if (!b[AccW-1]) alu_apply = a >>> (b > 31 ? 31 : b);
        else alu_apply = a << (b < -31 ? 31 : -b);
      loom_accel_pkg::ALU_MUL: alu_apply = a * b;
      default: alu_apply = 'x;
    endcase
  endfunction

  always_ff @(posedge clk) begin
    done <= 1'b0;
    fault <= 1'b0;
    mac_step <= 1'b0;
    alu_step <= 1'b0;
    if (!rst_n) begin
      issuing <= 1'b0;
      s1_valid <= 1'b0;
      s1_second <= 1'b0;
      s2_valid <= 1'b0;
      s3_valid <= 1'b0;
      w_valid <= 1'b0;
      fault_code <= '0;
    end else if (start) begin
      issuing <= 1'b1;
      u <= uop_begin;
      o <= '0;
      n <= '0;
      {dst_o, dst_n, src_o, src_n, wgt_o, wgt_n} <= '0;
    end else if (s1_bad) begin
      fault <= 1'b1;
      fault_code <= loom_accel_pkg::FAULT_INDEX_OUT_OF_RANGE;
      issuing <= 1'b0;
      s1_valid <= 1'b0;
      s1_second <= 1'b0;
      s2_valid <= 1'b0;
      s3_valid <= 1'b0;
    end else begin
      // S0 (waits while S1 reads an operand)
      if (!s1_first_of_two) s1_valid <= issuing;
      if (issuing && !s1_first_of_two) begin
        s1_dst_off <= dst_o + dst_n;
        s1_src_off <= src_o + src_n;
        s1_wgt_off <= wgt_o + wgt_n;
        u <= last_u ? uop_begin : u + 32'd1;
        if (last_u) begin
          n <= last_n ? 16'd0 : n + 16'd1;
          dst_n <= last_n ? 32'd0 : dst_n + dst_factor_in;
          src_n <= last_n ? 32'd0 : src_n + src_factor_in;
          wgt_n <= last_n ? 32'd0 : wgt_n + wgt_factor_in;
          if (last_n) begin
            o <= o + 16'd1;
            dst_o <= dst_o + dst_factor_out;
            src_o <= src_o + src_factor_out;
            wgt_o <= wgt_o + wgt_factor_out;
            if (last_o) issuing <= 1'b0;
          end
        end
      end
      // S1
      s1_second <= s1_first_of_two;
      if (s1_first_of_two) begin
        s1_dst_q <= AccAW'(s1_dst);
        s1_src_q <= AccAW'(s1_src);
      end
      // The operand read last cycle. It misses only the write of the iteration just ahead (S3
      // now); with every iteration two cycles long that one is in the write-back stage when this
      // reaches S2, where forwarding catches it.
      if (s1_second) src_q <= acc_rdata;
      s2_valid <= s1_valid && !s1_first_of_two;
      s2_dst <= s1_second ? s1_dst_q : AccAW'(s1_dst);
      s2_src <= s1_second ? s1_src_q : AccAW'(s1_src);
      // S2
      s3_valid <= s2_valid;
      // (computed here, only for a valid S2 and only its kind: the products as continuous logic
      // into one wide vector made the Verilated model 7x slower)
      if (s2_valid) begin : s2_math
        logic [AccEW-1:0] old, other;
        old = forwarded(s2_dst, acc_rdata);
        other = forwarded(s2_src, src_q);
        s3_dst <= s2_dst;
        for (int e = 0; e < Elems; e++) begin : lane
          logic signed [AccW-1:0] a, b, sum;
          a = old[e*AccW+:AccW];
          if (is_alu) begin
            b = use_imm ? AccW'($signed(imm)) : other[e*AccW+:AccW];
            s3_data[e*AccW+:AccW] <= alu_apply(alu_op, a, b);
          end else if (reset_acc) begin
            s3_data[e*AccW+:AccW] <= '0;
          end else begin
            sum = a;
            for (int q = 0; q < BlockIn; q++)
              sum = sum + AccW'(gemm_product(e % BlockOut, $signed(inp_rdata[((e / BlockOut) * BlockIn + q)*InpW+:InpW]), q));
            s3_data[e*AccW+:AccW] <= sum;
          end
        end
        mac_step <= !is_alu && !reset_acc;
        alu_step <= is_alu;
      end
      // S3
      w_valid <= s3_valid;
      w_dst <= s3_dst;
      w_data <= s3_data;
      if (!issuing && !s1_valid && !s2_valid && s3_valid) done <= 1'b1;
    end
  end

`ifndef SYNTHESIS
  // Only decoded ALU ops reach the core.
  always_ff @(posedge clk) begin
    if (rst_n && s2_valid && is_alu)
      assert (alu_op inside {loom_accel_pkg::ALU_MIN, loom_accel_pkg::ALU_MAX, loom_accel_pkg::ALU_ADD,
                             loom_accel_pkg::ALU_SHR, loom_accel_pkg::ALU_MUL})
      else $error("loom_gemm_alu: undecoded ALU op %0d", alu_op);
  end
`endif

  assign acc_we = s3_valid;
  assign acc_waddr = s3_dst;
  assign acc_wdata = s3_data;
  assign out_we = s3_valid;
  assign out_waddr = OutAW'(s3_dst);
  for (genvar e = 0; e < Elems; e++) begin : g_out
    assign out_wdata[e*OutW+:OutW] = s3_data[e*AccW+:OutW];  // the low bits, like a truncating cast
  end
endmodule
