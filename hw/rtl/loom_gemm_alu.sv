// The compute core: runs a GEMM or ALU instruction's micro-ops inside its two-level loop, one
// micro-op iteration per cycle (GEMM, ALU with an immediate, MOV), two (ALU with a register
// operand: the accumulator has one read port, as in VTA) or five (MUL, and SHR by a register: a
// multi-cycle unit). Every stage is cut so that no register-to-register path needs more than about 5 ns on
// a 7-series part (docs/fpga_fit.md):
//   I0 issue:    loop counters, running index offsets, micro-op read
//   I1 word:     the micro-op word into a register
//   I1b index:   micro-op fields + offsets
//   I2 read:     range checks (fault), input and weight reads
//   I3 operands: input and weight words registered (the DSPs' input registers)
//   I4 multiply: BATCH x BLOCK_OUT x BLOCK_IN products of INP_WIDTH x WGT_WIDTH bits (the DSPs'
//                M registers; LUTs for 2-bit operands)
//   I5 correct:  multiplier outputs, packed products corrected; ALU operand read (register operand)
//   I6 sum 1:    dot products reduced to groups of four; accumulator read (destination, or MOV's
//                operand)
//   I7 sum 2:    groups reduced; accumulator words forwarded from the writes in flight
//   I8 execute:  accumulate (GEMM) or the ALU op (CLIP: two compares with the immediate's bytes;
//                SHRSAT: the shift); MUL and SHR by a register continue in U1-U4
//   W  write:    accumulator entry and its low bits into the out buffer (SHRSAT: the shifted word
//                saturated to its range on the way, in the write and in what I7 forwards)
// Forwarding: I6/I7 take the two writes after the read (the result register and the write of the
// cycle before); I8 takes the result about to be written, selected by a compare registered in
// I7. So back-to-back accumulation into one entry runs without stalls, and the select in front
// of I8's adder is one LUT.
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
    // Command fields as wide as the ISA's (micro-op range, loop extents, index factors)
    localparam int UopBW = loom_accel_pkg::GEMM_UOP_BEGIN_W,
    localparam int UopEW = loom_accel_pkg::GEMM_UOP_END_W,
    localparam int IterW = loom_accel_pkg::GEMM_ITER_OUT_W,
    localparam int DstFW = loom_accel_pkg::GEMM_DST_FACTOR_OUT_W,
    localparam int SrcFW = loom_accel_pkg::GEMM_SRC_FACTOR_OUT_W,
    localparam int WgtFFW = loom_accel_pkg::GEMM_WGT_FACTOR_OUT_W,
    // Products per multiplier (g_packed_multipliers below; 1: one each) and LUT multipliers (lut_product):
    // the generator's choice from the operand widths, the same results either way.
    parameter int Pack = loom_accel_pkg::GEMM_PRODUCTS_PER_MULT,
    parameter bit LutMult = loom_accel_pkg::GEMM_LUT_MULT
) (
    input  logic clk_i,
    input  logic rst_ni,
    // command (held stable while busy)
    input  logic        start_i,
    input  logic        is_alu_i,
    input  logic        reset_acc_i,  // GEMM: zero the accumulators
    input  logic [UopBW-1:0]  uop_begin_i,
    input  logic [UopEW-1:0]  uop_end_i,
    input  logic [IterW-1:0]  iter_out_i,
    input  logic [IterW-1:0]  iter_in_i,
    input  logic [DstFW-1:0]  dst_factor_out_i,
    input  logic [DstFW-1:0]  dst_factor_in_i,
    input  logic [SrcFW-1:0]  src_factor_out_i,
    input  logic [SrcFW-1:0]  src_factor_in_i,
    input  logic [WgtFFW-1:0] wgt_factor_out_i,
    input  logic [WgtFFW-1:0] wgt_factor_in_i,
    input  logic [2:0]  alu_op_i,
    input  logic        use_imm_i,
    input  logic [15:0] imm_i,
    output logic        done_o,
    output logic        fault_o,
    output logic [7:0]  fault_code_o,
    output logic        mac_step_o,  // a GEMM iteration (BATCH*BLOCK_IN*BLOCK_OUT MACs) this cycle
    output logic        alu_step_o,  // an ALU iteration (BATCH*BLOCK_OUT ops) this cycle
    output logic        reset_step_o,     // a GEMM iteration that zeroes its accumulator entry
    output logic        alu_vec_step_o,   // an ALU iteration that reads two accumulator entries
    // scratchpads
    output logic [UopAW-1:0] uop_raddr_o,
    input  logic [31:0]      uop_rdata_i,
    output logic [InpAW-1:0] inp_raddr_o,
    input  logic [InpEW-1:0] inp_rdata_i,
    output logic [WgtAW-1:0] wgt_raddr_o,
    input  logic [WgtEW-1:0] wgt_rdata_i,
    output logic [AccAW-1:0] acc_raddr_o,
    input  logic [AccEW-1:0] acc_rdata_i,
    output logic             acc_we_o,
    output logic [AccAW-1:0] acc_waddr_o,
    output logic [AccEW-1:0] acc_wdata_o,
    output logic             out_we_o,
    output logic [OutAW-1:0] out_waddr_o,
    output logic [OutEW-1:0] out_wdata_o
);
  localparam int DstW = loom_accel_pkg::UOP_DST_BITS;
  localparam int SrcW = loom_accel_pkg::UOP_SRC_BITS;
  localparam int WgtFW = loom_accel_pkg::UOP_WGT_BITS;
  localparam int Lanes = Batch * BlockOut;
  localparam int ProdW = InpW + WgtW;  // a product's two's complement width
  localparam int ProdsW = Lanes * BlockIn * ProdW;
  // Packed multipliers: BLOCK_OUT columns in groups of Pack (the last one may be short), each
  // group's products of one input in one Pack * ProdW-bit word.
  localparam int ColGroups = (BlockOut + Pack - 1) / Pack;
  localparam int MultW = Pack * ProdW;
  // The packed operand: the top weight shifted up, plus the lower ones (one more bit: -8 * 2^12 - 8
  // is below -2^15).
  localparam int PackAW = (Pack - 1) * ProdW + WgtW + (Pack > 1 ? 1 : 0);
  localparam int MultsW = Batch * ColGroups * BlockIn * MultW;
  // Dot-product reduction: I6 sums groups of Group products, I7 the groups, I8 adds the rest.
  localparam int Group = BlockIn < 4 ? BlockIn : 4;
  localparam int Groups = BlockIn / Group;
  localparam int Group2 = Groups < 4 ? Groups : 4;
  localparam int Groups2 = Groups / Group2;
  localparam int SumW = ProdW + $clog2(BlockIn) + 1;  // any BLOCK_IN-term dot product fits
  localparam int LastStage = 8;  // I2..I8 carry valid, I3..I8 the accumulator indices too
  // Index arithmetic, F + 1 bits (F: the widest micro-op field or factor; every depth D is at
  // most 2^F): every index I2 checks is exact up to the first one out of range, after which the
  // instruction stops and the iterations behind it are dropped. The first bad index is below
  // D + 2^F: it adds one micro-op field, factor_in or factor_out to an index already checked
  // (the iteration before it, or the first of the block before it). Its terms are no larger.
  // Indices never checked (a reset GEMM's weights) may wrap; they are never used.
  localparam int FieldW = DstW > SrcW ? (DstW > WgtFW ? DstW : WgtFW) : (SrcW > WgtFW ? SrcW : WgtFW);
  localparam int FactorW = DstFW > SrcFW ? (DstFW > WgtFFW ? DstFW : WgtFFW) : (SrcFW > WgtFFW ? SrcFW : WgtFFW);
  localparam int IdxW = (FieldW > FactorW ? FieldW : FactorW) + 1;

  wire unused_uop_bits = &{1'b0, uop_q};  // bits above the micro-op fields

  // ---- the command, decoded once at start (it is held stable while busy) ----
  logic        alu_q, gemm_math_q, alu_multi_q, use_imm_q, alu_mul_q, shr_left_q;
  // two_reads_q: an ALU op reading its destination and a register operand (I5 and I6);
  // mov_src_q: MOV from a register (I6 reads the operand instead of the destination);
  // mov_imm_q: MOV of the immediate (I7 takes it as the destination word); clip_lo_q and
  // clip_hi_q: CLIP's or SHRSAT's bounds; sat_q: SHRSAT (W saturates the shifter's result);
  // sat_mask_q: the bits at or above the width minus one, which a value inside the range has all
  // equal to its sign; sat_nonneg_q: a range without negative values
  logic        two_reads_q, mov_src_q, mov_imm_q, sat_q, sat_nonneg_q;
  logic [AccW-1:0] clip_lo_q, clip_hi_q, sat_mask_q;
  // I8's result: min or max (minmax_q, res_max_q) or else the pre-select: 0 the adder, 1 the
  // shifter, 2 the multi-cycle unit, 3 the clamp (CLIP; zero for a GEMM reset)
  logic        minmax_q, res_max_q;
  logic [1:0]  pre_sel_q;
  logic [2:0]  gap_cmd_q;  // the initiation interval minus one
  logic [2:0]  alu_op_q;
  logic [4:0]  shr_amt_q;  // SHR by the immediate
  logic [AccW-1:0] imm_q;
  logic [UopBW-1:0] uop_last_q;
  logic [IterW-1:0] iter_in_last_q, iter_out_last_q;
  // The op's initiation interval: the next iteration's operands are read only after this one's
  // result can be forwarded (two reads for a register operand; multi-cycle ops take four).
  wire alu_multi = is_alu_i && (alu_op_i == loom_accel_pkg::ALU_MUL ||
                                (alu_op_i == loom_accel_pkg::ALU_SHR && !use_imm_i));
  wire alu_mov = is_alu_i && alu_op_i == loom_accel_pkg::ALU_MOV;
  wire is_clip = is_alu_i && alu_op_i == loom_accel_pkg::ALU_CLIP;
  wire is_shrsat = is_alu_i && alu_op_i == loom_accel_pkg::ALU_SHRSAT;
  // SHRSAT's immediate: the shift in [4:0], the width minus one in [8:5], the non-negative range in [9]
  wire [AccW-1:0] sat_hi = ~({AccW{1'b1}} << imm_i[8:5]);  // 2^(w-1) - 1; the low bound is its complement
  always_ff @(posedge clk_i) begin
    if (start_i) begin
      alu_q <= is_alu_i;
      gemm_math_q <= !is_alu_i && !reset_acc_i;
      alu_multi_q <= alu_multi;
      use_imm_q <= use_imm_i;
      alu_mul_q <= alu_op_i == loom_accel_pkg::ALU_MUL;
      two_reads_q <= is_alu_i && !use_imm_i && !alu_mov;
      mov_src_q <= alu_mov && !use_imm_i;
      mov_imm_q <= alu_mov && use_imm_i;
      // CLIP's bounds; [0, 0] otherwise, so that I8's clamp is the GEMM reset's zero too
      clip_lo_q <= is_clip ? AccW'($signed(imm_i[7:0])) : is_shrsat && !imm_i[9] ? ~sat_hi : '0;
      clip_hi_q <= is_clip ? AccW'($signed(imm_i[15:8])) : is_shrsat ? sat_hi : '0;
      sat_q <= is_shrsat;
      sat_nonneg_q <= imm_i[9];
      sat_mask_q <= ~sat_hi;
      // which of I8's candidates each op takes (MUL and SHR by a register: the unit's); the
      // decoder (loom_fetch) faults on any other op before it reaches the core, and the
      // assertion below says so in simulation
      if (!is_alu_i) {minmax_q, res_max_q, pre_sel_q} <= {2'b00, reset_acc_i ? 2'd3 : 2'd0};
      else begin
        unique case (alu_op_i)
          loom_accel_pkg::ALU_MIN: {minmax_q, res_max_q, pre_sel_q} <= {2'b10, 2'd0};
          loom_accel_pkg::ALU_MAX: {minmax_q, res_max_q, pre_sel_q} <= {2'b11, 2'd0};
          loom_accel_pkg::ALU_ADD: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd0};
          loom_accel_pkg::ALU_SHR: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd1};  // by a register: the unit's
          loom_accel_pkg::ALU_MUL: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd2};
          // MOV: the shifter by zero passes the operand I7 took as the destination word
          loom_accel_pkg::ALU_MOV: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd1};
          loom_accel_pkg::ALU_CLIP: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd3};  // I8's clamp
          loom_accel_pkg::ALU_SHRSAT: {minmax_q, res_max_q, pre_sel_q} <= {2'b00, 2'd1};  // the shifter, saturated
          // the decoder faults on any other op first (the assertion below): waived from coverage
          /*verilator coverage_off*/
          default: {minmax_q, res_max_q, pre_sel_q} <= 'x;
          /*verilator coverage_on*/
        endcase
      end
      gap_cmd_q <= !is_alu_i ? 3'd0 : alu_multi ? 3'd4 : use_imm_i || alu_mov ? 3'd0 : 3'd1;
      alu_op_q <= alu_op_i;
      imm_q <= AccW'($signed(imm_i));
      // SHR: a negative amount shifts left (the decoder bounds |imm| by 31)
      shr_left_q <= imm_i[15] && !alu_mov && !is_shrsat;
      shr_amt_q <= alu_mov ? 5'd0 : imm_i[15] && !is_shrsat ? 5'd0 - imm_i[4:0] : imm_i[4:0];
      uop_last_q <= UopBW'(uop_end_i - UopEW'(1));  // the decoder keeps uop_end in 1..UOP_DEPTH
      iter_in_last_q <= iter_in_i - IterW'(1);
      iter_out_last_q <= iter_out_i - IterW'(1);
    end
  end

  // ---- I0: issue ----
  logic        issuing_q;
  logic [2:0]  gap_q;  // cycles until the next issue
  logic [UopBW-1:0] u_q;
  logic [IterW-1:0] o_q, n_q;
  logic [IdxW-1:0] dst_o_q, dst_n_q, src_o_q, src_n_q, wgt_o_q, wgt_n_q;  // running o*factor_out, n*factor_in
  wire issue = issuing_q && gap_q == 3'd0;
  wire last_u = u_q == uop_last_q, last_n = n_q == iter_in_last_q, last_o = o_q == iter_out_last_q;
  assign uop_raddr_o = UopAW'(u_q);

  // ---- I1: the micro-op word into a register (the block RAM's output register); I1b: index ----
  logic        i1_valid_q, i1b_valid_q;
  logic [IdxW-1:0] i1_dst_off_q, i1_src_off_q, i1_wgt_off_q, i1b_dst_off_q, i1b_src_off_q, i1b_wgt_off_q;
  logic [31:0] uop_q;

  // ---- I2..I8: per-stage valid (stage s at bit s) and accumulator indices (I3..I8) ----
  logic [LastStage:2]             valid_q;
  logic [(LastStage-2)*AccAW-1:0] dst_q, src_q;  // stages 3..8
  function automatic logic [AccAW-1:0] dst_at(input int s);
    dst_at = dst_q[(s-3)*AccAW+:AccAW];
  endfunction
  function automatic logic [AccAW-1:0] src_at(input int s);
    src_at = src_q[(s-3)*AccAW+:AccAW];
  endfunction
  logic [IdxW-1:0] i2_dst_q, i2_src_q, i2_wgt_q;
  logic        i3_bad_q;  // I3's iteration has an index out of range: the instruction stops
  wire [IdxW-1:0] src_depth = alu_q ? IdxW'(loom_accel_pkg::ACC_DEPTH) : IdxW'(loom_accel_pkg::INP_DEPTH);
  wire i2_bad = valid_q[2] && (i2_dst_q >= IdxW'(loom_accel_pkg::ACC_DEPTH) || i2_src_q >= src_depth ||
                               (gemm_math_q && i2_wgt_q >= IdxW'(loom_accel_pkg::WGT_DEPTH)));
  assign inp_raddr_o = InpAW'(i2_src_q);
  assign wgt_raddr_o = WgtAW'(i2_wgt_q);
  // The accumulator's one read port: I5's operand (register-operand ALU ops, which leave I6
  // empty behind them), else I6's destination (MOV's operand).
  wire i5_reads_src = valid_q[5] && two_reads_q;
  assign acc_raddr_o = i5_reads_src ? src_at(5) : mov_src_q ? src_at(6) : dst_at(6);

  // ---- products, sums, operands ----
  logic [InpEW-1:0]  x_q;      // I3: inputs
  logic [WgtEW-1:0]  w_q;      // I3: weights
  logic [MultsW-1:0] m_q;      // I4: raw multiplier outputs, one whole word per multiplier: [b][group][q]
  logic [ProdsW-1:0] prod_q;   // I5: products, lane-major: lane e, input q at (e*BlockIn+q)*ProdW
  logic [Lanes*Groups*SumW-1:0]  grp_q;  // I6
  logic [Lanes*Groups2*SumW-1:0] grp2_q;  // I7
  logic [AccEW-1:0]  opb_i6_q;  // I6: the register operand
  logic [AccEW-1:0]  opa_q, opb_q;  // I7: destination and operand words, forwarded
  logic              hit_a_q, hit_b_q;  // I8 takes the result register instead (written this cycle)
  // result register (W)
  logic             res_valid_q;
  logic [AccAW-1:0] res_dst_q;
  logic [AccEW-1:0] res_q;
  // the write of the cycle before
  logic             wr_valid_q;
  logic [AccAW-1:0] wr_dst_q;
  logic [AccEW-1:0] wr_q;
  // multi-cycle unit U1..U4 (stage s at bit s, or at [(s-1)*AccAW +: AccAW])
  logic [4:1]         u_valid_q;
  logic [4*AccAW-1:0] u_dst_q;
  logic [AccEW-1:0]   u_res_q;  // U3's result, into the result register in U4
  logic [AccEW-1:0] ua_q, ub_q;  // U1: operands
  logic [Lanes*96-1:0] um_q;  // U2: the three partial products of each lane's MUL (DSP M registers)
  logic [Lanes*64-1:0] up_q;  // U3: the low product and the sum of the two cross products
  logic [AccEW-1:0] ushift_a_q, ushift_q;  // U2: SHR operand, U3: SHR result
  logic [Lanes*6-1:0] ushift_amt_q;  // U2: {left, amount} per lane

  // The word W writes: the result register, or for SHRSAT each lane saturated to the range (its
  // bits at or above the width minus one not all its sign, or negative in a non-negative range:
  // the bound on that side). One reduction and a select behind a register, off I8's path.
  logic [AccEW-1:0] res_w;
  always_comb begin
    for (int e = 0; e < Lanes; e++) begin : w_lane
      logic [AccW-1:0] v;
      logic outside;
      v = res_q[e*AccW+:AccW];
      outside = sat_q && ((sat_nonneg_q && v[AccW-1]) || ((v ^ {AccW{v[AccW-1]}}) & sat_mask_q) != '0);
      res_w[e*AccW+:AccW] = !outside ? v : v[AccW-1] ? clip_lo_q : clip_hi_q;
    end
  end

  // The accumulator word of entry `a`, given the word read from the SRAM before the writes in
  // the result register (this cycle) and the write register (last cycle).
  function automatic logic [AccEW-1:0] forwarded(input logic [AccAW-1:0] a, input logic [AccEW-1:0] from_sram);
    if (res_valid_q && res_dst_q == a) forwarded = res_w;
    else if (wr_valid_q && wr_dst_q == a) forwarded = wr_q;
    else forwarded = from_sram;
  endfunction

  // Pack signed products that share the input x, {w[Pack-1]*x, ..., w[0]*x}, from one multiply:
  // p = (sum_j w[j] * 2^(j*ProdW)) * x (g_packed_multipliers below). The packed operand is at most
  // 25 bits (a DSP48E1's A/D ports through its pre-adder), x at most 8 (its B port). Product j lies
  // in bits [j*ProdW, +ProdW) less the borrow of the products below it, which are negative exactly
  // when bit j*ProdW-1 is set: I5 adds that bit back. With 8-bit operands the products lie in
  // [-16256, 16384], so two fit; 4 x 4-bit ones in [-56, 64], so three.

  // An iteration in I1..I8 or U1..U4 (one that will still write).
  function automatic logic pipeline_busy();
    pipeline_busy = i1_valid_q || i1b_valid_q || valid_q != '0 || u_valid_q != '0;
  endfunction

  // ---- control: issue, stage valids, faults, done (reset and the fault stop come first) ----
  always_ff @(posedge clk_i) begin
    done_o <= 1'b0;
    fault_o <= 1'b0;
    mac_step_o <= 1'b0;
    alu_step_o <= 1'b0;
    reset_step_o <= 1'b0;
    alu_vec_step_o <= 1'b0;
    if (!rst_ni) begin
      issuing_q <= 1'b0;
      gap_q <= '0;
      i1_valid_q <= 1'b0;
      i1b_valid_q <= 1'b0;
      valid_q <= '0;
      u_valid_q <= '0;
      res_valid_q <= 1'b0;
      wr_valid_q <= 1'b0;
      i3_bad_q <= 1'b0;
      fault_code_o <= '0;
    end else if (start_i) begin
      issuing_q <= 1'b1;
      gap_q <= '0;
      u_q <= uop_begin_i;
      o_q <= '0;
      n_q <= '0;
      {dst_o_q, dst_n_q, src_o_q, src_n_q, wgt_o_q, wgt_n_q} <= '0;
    end else if (i3_bad_q) begin
      // Stop: the iterations in flight are dropped with the instruction.
      fault_o <= 1'b1;
      fault_code_o <= loom_accel_pkg::FAULT_INDEX_OUT_OF_RANGE;
      issuing_q <= 1'b0;
      i1_valid_q <= 1'b0;
      i1b_valid_q <= 1'b0;
      valid_q <= '0;
      u_valid_q <= '0;
      res_valid_q <= 1'b0;
      i3_bad_q <= 1'b0;
    end else begin
      // I0
      gap_q <= issue ? gap_cmd_q : gap_q - (gap_q != 3'd0 ? 3'd1 : 3'd0);
      i1_valid_q <= issue;
      if (issue) begin
        i1_dst_off_q <= dst_o_q + dst_n_q;
        i1_src_off_q <= src_o_q + src_n_q;
        i1_wgt_off_q <= wgt_o_q + wgt_n_q;
        u_q <= last_u ? uop_begin_i : u_q + UopBW'(1);
        if (last_u) begin
          n_q <= last_n ? '0 : n_q + IterW'(1);
          dst_n_q <= last_n ? '0 : dst_n_q + IdxW'(dst_factor_in_i);
          src_n_q <= last_n ? '0 : src_n_q + IdxW'(src_factor_in_i);
          wgt_n_q <= last_n ? '0 : wgt_n_q + IdxW'(wgt_factor_in_i);
          if (last_n) begin
            o_q <= o_q + IterW'(1);
            dst_o_q <= dst_o_q + IdxW'(dst_factor_out_i);
            src_o_q <= src_o_q + IdxW'(src_factor_out_i);
            wgt_o_q <= wgt_o_q + IdxW'(wgt_factor_out_i);
            if (last_o) issuing_q <= 1'b0;
          end
        end
      end
      // I1..I8 move on; I2 checks its indices
      i1b_valid_q <= i1_valid_q;
      valid_q <= {valid_q[LastStage-1:2], i1b_valid_q};
      i3_bad_q <= i2_bad;
      res_valid_q <= (valid_q[8] && !alu_multi_q) || u_valid_q[4];
      u_valid_q <= {u_valid_q[3:1], valid_q[8] && alu_multi_q};
      wr_valid_q <= res_valid_q;
      mac_step_o <= valid_q[8] && gemm_math_q;
      alu_step_o <= valid_q[8] && alu_q;
      reset_step_o <= valid_q[8] && !alu_q && !gemm_math_q;
      alu_vec_step_o <= valid_q[8] && two_reads_q;
      if (!issuing_q && !pipeline_busy() && res_valid_q) done_o <= 1'b1;
    end
  end

  // ---- datapath (no reset: every register is read only behind its stage's valid) ----
  always_ff @(posedge clk_i) begin
    // I1, I1b
    if (i1_valid_q) begin
      uop_q <= uop_rdata_i;
      i1b_dst_off_q <= i1_dst_off_q;
      i1b_src_off_q <= i1_src_off_q;
      i1b_wgt_off_q <= i1_wgt_off_q;
    end
    if (i1b_valid_q) begin
      i2_dst_q <= IdxW'(uop_q[DstW-1:0]) + i1b_dst_off_q;
      i2_src_q <= IdxW'(uop_q[DstW+:SrcW]) + i1b_src_off_q;
      i2_wgt_q <= IdxW'(uop_q[DstW+SrcW+:WgtFW]) + i1b_wgt_off_q;
    end
    // indices move along with their iterations
    dst_q <= {dst_q[0+:(LastStage-3)*AccAW], AccAW'(i2_dst_q)};
    src_q <= {src_q[0+:(LastStage-3)*AccAW], AccAW'(i2_src_q)};
    // I3 (the products only for GEMM iterations that multiply: the Verilated model evaluates
    // nothing for the others)
    if (valid_q[3] && gemm_math_q) begin
      x_q <= inp_rdata_i;
      w_q <= wgt_rdata_i;
    end
    // I4: in g_multipliers below
    // I5: each product takes back the borrow of the products below it in its word
    if (valid_q[5] && gemm_math_q) begin : i5_correct
      for (int e = 0; e < Lanes; e++)
        for (int q = 0; q < BlockIn; q++) begin
          logic [MultW-1:0] p;
          int j;
          j = (e % BlockOut) % Pack;
          p = m_q[(((e / BlockOut) * ColGroups + (e % BlockOut) / Pack) * BlockIn + q)*MultW+:MultW];
          prod_q[(e * BlockIn + q)*ProdW+:ProdW] <= j == 0 ? p[ProdW-1:0] : p[j*ProdW+:ProdW] + ProdW'(p[j*ProdW-1]);
        end
    end
    // I6
    if (valid_q[6] && gemm_math_q) begin : i6_sum
      for (int e = 0; e < Lanes; e++)
        for (int g = 0; g < Groups; g++) begin
          logic [Group*SumW-1:0] t;  // a balanced tree, in place
          for (int k = 0; k < Group; k++) t[k*SumW+:SumW] = SumW'($signed(prod_q[(e * BlockIn + g * Group + k)*ProdW+:ProdW]));
          for (int n = Group / 2; n >= 1; n = n / 2)
            for (int k = 0; k < n; k++) t[k*SumW+:SumW] = t[2*k*SumW+:SumW] + t[(2*k+1)*SumW+:SumW];
          grp_q[(e * Groups + g)*SumW+:SumW] <= t[SumW-1:0];
        end
    end
    if (valid_q[6] && two_reads_q) opb_i6_q <= forwarded(src_at(6), acc_rdata_i);
    // I7
    if (valid_q[7] && gemm_math_q) begin : i7_sum
      for (int e = 0; e < Lanes; e++)
        for (int g = 0; g < Groups2; g++) begin
          logic [Group2*SumW-1:0] t;
          for (int k = 0; k < Group2; k++) t[k*SumW+:SumW] = grp_q[(e * Groups + g * Group2 + k)*SumW+:SumW];
          for (int n = Group2 / 2; n >= 1; n = n / 2)
            for (int k = 0; k < n; k++) t[k*SumW+:SumW] = t[2*k*SumW+:SumW] + t[(2*k+1)*SumW+:SumW];
          grp2_q[(e * Groups2 + g)*SumW+:SumW] <= t[SumW-1:0];
        end
    end
    if (valid_q[7]) begin : i7_operands
      logic [AccAW-1:0] a_at7;  // the entry I6 read: the destination, or MOV's operand
      a_at7 = mov_src_q ? src_at(7) : dst_at(7);
      opa_q <= mov_imm_q ? {Lanes{imm_q}} : forwarded(a_at7, acc_rdata_i);
      opb_q <= use_imm_q ? {Lanes{imm_q}} : forwarded(src_at(7), opb_i6_q);
      // the result written next cycle: I8's, or the multi-cycle unit's
      // SHRSAT takes the word I7 read, without the write of the iteration just ahead (ISA: its
      // iterations read their entry before that write lands), so I8 never saturates
      hit_a_q <= !mov_imm_q && !sat_q && (alu_multi_q ? u_valid_q[4] && u_dst_q[3*AccAW+:AccAW] == dst_at(7)
                                            : valid_q[8] && dst_at(8) == a_at7);
      hit_b_q <= !use_imm_q && (alu_multi_q ? u_valid_q[4] && u_dst_q[3*AccAW+:AccAW] == src_at(7)
                                            : valid_q[8] && dst_at(8) == src_at(7));
    end
    // I8: every candidate side by side (adder, shifter, the multi-cycle unit's result, the
    // operands for min and max); a 4:1 select of the first three (and zero) from registers, then
    // one LUT that takes min, max or that; CLIP's clamp between the immediate's bytes is the
    // fourth candidate. The unit's result comes when I8 is idle (II 5).
    if ((valid_q[8] && !alu_multi_q) || u_valid_q[4]) begin : i8_exec
      logic [AccEW-1:0] a;
      logic [1:0] pre_sel;
      logic minmax;
      pre_sel = u_valid_q[4] ? 2'd2 : pre_sel_q;
      minmax = !u_valid_q[4] && minmax_q;
      a = hit_a_q ? res_q : opa_q;
      res_dst_q <= u_valid_q[4] ? u_dst_q[3*AccAW+:AccAW] : dst_at(8);
      for (int e = 0; e < Lanes; e++) begin : lane
        logic signed [AccW-1:0] la, lb, lc, addend, sum, shifted, clamped, pre;
        la = a[e*AccW+:AccW];
        lb = opb_q[e*AccW+:AccW];  // single-cycle ops: the iteration ahead wrote two cycles ago, I7 forwarded it
        addend = lb;
        if (gemm_math_q) begin
          addend = '0;
          for (int g = 0; g < Groups2; g++) addend = addend + AccW'($signed(grp2_q[(e * Groups2 + g)*SumW+:SumW]));
        end
        sum = la + addend;
        shifted = shr_left_q ? la << shr_amt_q : la >>> shr_amt_q;  // SHR (and SHRSAT) by the immediate
        // CLIP clamps the word I7 read without I8's forward: the write it would take is the
        // clamp of the same word (an iteration reads what the one ahead of it read, and the
        // instruction before has drained), and a clamp clamped again is the same.
        lc = opa_q[e*AccW+:AccW];
        clamped = lc < $signed(clip_lo_q) ? clip_lo_q : lc > $signed(clip_hi_q) ? clip_hi_q : lc;
        unique case (pre_sel)
          2'd0: pre = sum;
          2'd1: pre = shifted;
          2'd2: pre = u_res_q[e*AccW+:AccW];
          default: pre = clamped;  // CLIP; [0, 0] for the GEMM reset
        endcase
        res_q[e*AccW+:AccW] <= !minmax ? pre : (la < lb) != res_max_q ? la : lb;
      end
    end
    if (valid_q[8] && alu_multi_q) begin : u0
      logic [AccEW-1:0] b;
      b = hit_b_q ? res_q : opb_q;  // only here can the iteration ahead still be in flight (II 5)
      ua_q <= hit_a_q ? res_q : opa_q;
      ub_q <= b;
    end
    // U1..U4: MUL as three 16 x 16 products (the low 32 bits of a*b), SHR by a register in two
    // steps; U3's result waits a cycle in u_res_q
    u_dst_q <= {u_dst_q[0+:3*AccAW], dst_at(8)};
    if (u_valid_q[1]) begin : u1
      for (int e = 0; e < Lanes; e++) begin
        logic [31:0] la, lb;  // sign-extended (16-bit accumulators: the same low bits, the same shifts)
        la = 32'($signed(ua_q[e*AccW+:AccW]));
        lb = 32'($signed(ub_q[e*AccW+:AccW]));
        um_q[e*96+:32] <= la[15:0] * lb[15:0];
        um_q[e*96+32+:32] <= la[31:16] * lb[15:0];
        um_q[e*96+64+:32] <= la[15:0] * lb[31:16];
        // SHR: a negative amount shifts left; amounts saturate at 31 either way
        ushift_amt_q[e*6+5] <= lb[31];
        ushift_amt_q[e*6+:5] <= !lb[31] ? (lb[30:5] != 0 ? 5'd31 : lb[4:0]) :
                                           (lb[30:5] != '1 || lb[4:0] == 5'd0 ? 5'd31 : 5'd0 - lb[4:0]);
        ushift_a_q[e*AccW+:AccW] <= AccW'(la);
      end
    end
    if (u_valid_q[2]) begin : u2
      for (int e = 0; e < Lanes; e++) begin
        up_q[e*64+:32] <= um_q[e*96+:32];
        up_q[e*64+32+:32] <= {16'b0, 16'(um_q[e*96+32+:16] + um_q[e*96+64+:16])};  // only its low half counts
      end
      for (int e = 0; e < Lanes; e++) begin
        logic signed [AccW-1:0] la;
        la = ushift_a_q[e*AccW+:AccW];
        ushift_q[e*AccW+:AccW] <= ushift_amt_q[e*6+5] ? la << ushift_amt_q[e*6+:5] : la >>> ushift_amt_q[e*6+:5];
      end
    end
    if (u_valid_q[3]) begin : u3
      for (int e = 0; e < Lanes; e++)
        u_res_q[e*AccW+:AccW] <= alu_mul_q ? AccW'(up_q[e*64+:32] + {up_q[e*64+32+:16], 16'b0}) : ushift_q[e*AccW+:AccW];
    end
    // W
    wr_dst_q <= res_dst_q;
    wr_q <= res_w;
  end

  // I4: one word per multiplier (yosys packs a register into the DSP, its M register, only when
  // it takes the whole product). One block per implementation, so that the others leave no reader
  // on the operand registers; the packed sums are concatenations, as yosys wants them for the
  // DSP's pre-adder (the low weight's register becomes its D register).
  // The weight of column `col` for input q (zero past BLOCK_OUT: a short last group).
  function automatic logic signed [WgtW-1:0] weight_of(input int col, input int q);
    weight_of = col < BlockOut ? w_q[(col * BlockIn + q)*WgtW+:WgtW] : '0;
  endfunction
  if (LutMult) begin : g_lut_multipliers
    // A product from shifted copies of the wider operand selected by the narrower one's bits (the
    // top bit's copy subtracted): adders and LUTs that yosys does not turn into a DSP48. Declared
    // in the block that calls it, so that a config without LUT multipliers has no such lines.
    function automatic logic [ProdW-1:0] lut_product(input logic signed [WgtW-1:0] w, input logic signed [InpW-1:0] x);
      logic signed [ProdW-1:0] p, wide;
      p = '0;
      if (WgtW <= InpW) begin
        wide = ProdW'(x);
        for (int i = 0; i < WgtW; i++)
          if (w[i]) p = i == WgtW - 1 ? p - (wide <<< i) : p + (wide <<< i);
      end else begin
        wide = ProdW'(w);
        for (int i = 0; i < InpW; i++)
          if (x[i]) p = i == InpW - 1 ? p - (wide <<< i) : p + (wide <<< i);
      end
      lut_product = p;
    endfunction
    always_ff @(posedge clk_i) begin
      if (valid_q[4] && gemm_math_q)
        for (int b = 0; b < Batch; b++)
          for (int col = 0; col < BlockOut; col++)
            for (int q = 0; q < BlockIn; q++)
              m_q[((b * ColGroups + col) * BlockIn + q)*MultW+:MultW] <=
                  MultW'(lut_product(weight_of(col, q), x_q[(b * BlockIn + q)*InpW+:InpW]));
    end
  end else if (Pack == 1) begin : g_plain_multipliers
    always_ff @(posedge clk_i) begin
      if (valid_q[4] && gemm_math_q)
        for (int b = 0; b < Batch; b++)
          for (int col = 0; col < BlockOut; col++)
            for (int q = 0; q < BlockIn; q++)
              m_q[((b * ColGroups + col) * BlockIn + q)*MultW+:MultW] <=
                  weight_of(col, q) * $signed(x_q[(b * BlockIn + q)*InpW+:InpW]);
    end
  end else if (Pack == 2) begin : g_packed_multipliers
    always_ff @(posedge clk_i) begin
      if (valid_q[4] && gemm_math_q)
        for (int b = 0; b < Batch; b++)
          for (int g = 0; g < ColGroups; g++)
            for (int q = 0; q < BlockIn; q++) begin
              logic signed [WgtW-1:0] w0, w1;
              logic signed [PackAW-1:0] a;
              logic signed [MultW-1:0] p;  // |a * x| < 2^(MultW-1)
              w0 = weight_of(g * 2, q);
              w1 = weight_of(g * 2 + 1, q);
              a = $signed({w1[WgtW-1], w1, {ProdW{1'b0}}}) + $signed({{(ProdW + 1) {w0[WgtW-1]}}, w0});
              p = a * $signed(x_q[(b * BlockIn + q)*InpW+:InpW]);
              m_q[((b * ColGroups + g) * BlockIn + q)*MultW+:MultW] <= p;
            end
    end
  end else begin : g_packed3_multipliers  // Pack == 3 (the generator packs at most three)
    always_ff @(posedge clk_i) begin
      if (valid_q[4] && gemm_math_q)
        for (int b = 0; b < Batch; b++)
          for (int g = 0; g < ColGroups; g++)
            for (int q = 0; q < BlockIn; q++) begin
              logic signed [WgtW-1:0] w0, w1, w2;
              logic signed [PackAW-1:0] a;
              logic signed [MultW-1:0] p;
              w0 = weight_of(g * 3, q);
              w1 = weight_of(g * 3 + 1, q);
              w2 = weight_of(g * 3 + 2, q);
              a = $signed({w2[WgtW-1], w2, {(2 * ProdW) {1'b0}}}) +
                  $signed({{(ProdW + 1) {w1[WgtW-1]}}, w1, {ProdW{1'b0}}}) + $signed({{(2 * ProdW + 1) {w0[WgtW-1]}}, w0});
              p = a * $signed(x_q[(b * BlockIn + q)*InpW+:InpW]);
              m_q[((b * ColGroups + g) * BlockIn + q)*MultW+:MultW] <= p;
            end
    end
  end

`ifndef SYNTHESIS
  // Only decoded ALU ops reach the core; the command is known when it starts.
  always_ff @(posedge clk_i) begin
    if (rst_ni && valid_q[8] && alu_q)
      assert (alu_op_q inside {loom_accel_pkg::ALU_MIN, loom_accel_pkg::ALU_MAX, loom_accel_pkg::ALU_ADD,
                               loom_accel_pkg::ALU_SHR, loom_accel_pkg::ALU_MUL, loom_accel_pkg::ALU_MOV,
                               loom_accel_pkg::ALU_CLIP, loom_accel_pkg::ALU_SHRSAT})
      else $error("loom_gemm_alu: undecoded ALU op %0d", alu_op_q);
    if (rst_ni && start_i)
      assert (!$isunknown({is_alu_i, reset_acc_i, alu_op_i, use_imm_i})) else $error("loom_gemm_alu: unknown (X) command");
  end
`endif

  assign acc_we_o = res_valid_q;
  assign acc_waddr_o = res_dst_q;
  assign acc_wdata_o = res_w;
  assign out_we_o = res_valid_q;
  assign out_waddr_o = OutAW'(res_dst_q);
  for (genvar e = 0; e < Lanes; e++) begin : g_out
    assign out_wdata_o[e*OutW+:OutW] = res_w[e*AccW+:OutW];  // the low bits, like a truncating cast
  end
endmodule
