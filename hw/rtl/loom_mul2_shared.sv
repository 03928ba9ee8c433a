// Two signed int8 x int8 products that share an operand: p_hi_o = a_hi_i * b_i and
// p_lo_o = a_lo_i * b_i. With Pack set both come out of one multiplier, which fits one DSP48E1
// (25 x 18) or DSP48E2 (27 x 18):
//   p = (a_hi * 2^16 + a_lo) * b = a_hi*b * 2^16 + a_lo*b
// The low product lies in [-16256, 16384], so p[15:0] is exactly a_lo*b. The bits above hold
// a_hi*b minus one when the low product is negative (its sign borrowed from them); adding p[15]
// back corrects that. Without Pack there are two multipliers (the plain core, kept so both
// variants stay testable).
module loom_mul2_shared #(
    parameter bit Pack = 1'b1
) (
    input  logic signed [7:0]  a_hi_i,
    input  logic signed [7:0]  a_lo_i,
    input  logic signed [7:0]  b_i,
    output logic signed [15:0] p_hi_o,
    output logic signed [15:0] p_lo_o
);
  if (Pack) begin : g_packed
    logic signed [24:0] a_packed;
    logic signed [32:0] p;
    assign a_packed = $signed({a_hi_i[7], a_hi_i, 16'b0}) + $signed({{17{a_lo_i[7]}}, a_lo_i});
    assign p = a_packed * b_i;
    assign p_lo_o = p[15:0];
    assign p_hi_o = p[31:16] + {15'b0, p[15]};
    wire unused_p_bit = p[32];  // a_hi*b needs 16 bits; bit 32 only repeats the sign
  end else begin : g_plain
    assign p_hi_o = a_hi_i * b_i;
    assign p_lo_o = a_lo_i * b_i;
  end
endmodule
