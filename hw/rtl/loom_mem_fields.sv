// Fields of a LOAD/STORE instruction, at the positions the generated package gives.
module loom_mem_fields (
    /* verilator lint_off UNUSEDSIGNAL */  // opcode and dependency flags are read elsewhere
    input  logic [loom_accel_pkg::INSN_BITS-1:0] insn_i,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [2:0]  mem_type_o,
    output logic [loom_accel_pkg::MEM_SRAM_BASE_W-1:0] sram_base_o,
    output logic [31:0] dram_base_o,
    output logic [15:0] y_size_o,
    output logic [15:0] x_size_o,
    output logic [15:0] x_stride_o,
    output logic [3:0]  y_pad0_o,
    output logic [3:0]  y_pad1_o,
    output logic [3:0]  x_pad0_o,
    output logic [3:0]  x_pad1_o
);
  assign mem_type_o = insn_i[loom_accel_pkg::MEM_MEMORY_TYPE_LSB+:loom_accel_pkg::MEM_MEMORY_TYPE_W];
  assign sram_base_o = insn_i[loom_accel_pkg::MEM_SRAM_BASE_LSB+:loom_accel_pkg::MEM_SRAM_BASE_W];
  assign dram_base_o = insn_i[loom_accel_pkg::MEM_DRAM_BASE_LSB+:loom_accel_pkg::MEM_DRAM_BASE_W];
  assign y_size_o = insn_i[loom_accel_pkg::MEM_Y_SIZE_LSB+:loom_accel_pkg::MEM_Y_SIZE_W];
  assign x_size_o = insn_i[loom_accel_pkg::MEM_X_SIZE_LSB+:loom_accel_pkg::MEM_X_SIZE_W];
  assign x_stride_o = insn_i[loom_accel_pkg::MEM_X_STRIDE_LSB+:loom_accel_pkg::MEM_X_STRIDE_W];
  assign y_pad0_o = insn_i[loom_accel_pkg::MEM_Y_PAD_0_LSB+:loom_accel_pkg::MEM_Y_PAD_0_W];
  assign y_pad1_o = insn_i[loom_accel_pkg::MEM_Y_PAD_1_LSB+:loom_accel_pkg::MEM_Y_PAD_1_W];
  assign x_pad0_o = insn_i[loom_accel_pkg::MEM_X_PAD_0_LSB+:loom_accel_pkg::MEM_X_PAD_0_W];
  assign x_pad1_o = insn_i[loom_accel_pkg::MEM_X_PAD_1_LSB+:loom_accel_pkg::MEM_X_PAD_1_W];
endmodule
