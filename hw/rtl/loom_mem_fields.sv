// Fields of a LOAD/STORE instruction, at the positions the generated package gives.
module loom_mem_fields (
    /* verilator lint_off UNUSEDSIGNAL */  // opcode and dependency flags are read elsewhere
    input  logic [127:0] insn,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [2:0]   mem_type,
    output logic [31:0]  sram_base,
    output logic [31:0]  dram_base,
    output logic [15:0]  y_size,
    output logic [15:0]  x_size,
    output logic [15:0]  x_stride,
    output logic [3:0]   y_pad0,
    output logic [3:0]   y_pad1,
    output logic [3:0]   x_pad0,
    output logic [3:0]   x_pad1
);
  assign mem_type = insn[loom_accel_pkg::MEM_MEMORY_TYPE_LSB+:loom_accel_pkg::MEM_MEMORY_TYPE_W];
  assign sram_base = 32'(insn[loom_accel_pkg::MEM_SRAM_BASE_LSB+:loom_accel_pkg::MEM_SRAM_BASE_W]);
  assign dram_base = insn[loom_accel_pkg::MEM_DRAM_BASE_LSB+:loom_accel_pkg::MEM_DRAM_BASE_W];
  assign y_size = insn[loom_accel_pkg::MEM_Y_SIZE_LSB+:loom_accel_pkg::MEM_Y_SIZE_W];
  assign x_size = insn[loom_accel_pkg::MEM_X_SIZE_LSB+:loom_accel_pkg::MEM_X_SIZE_W];
  assign x_stride = insn[loom_accel_pkg::MEM_X_STRIDE_LSB+:loom_accel_pkg::MEM_X_STRIDE_W];
  assign y_pad0 = insn[loom_accel_pkg::MEM_Y_PAD_0_LSB+:loom_accel_pkg::MEM_Y_PAD_0_W];
  assign y_pad1 = insn[loom_accel_pkg::MEM_Y_PAD_1_LSB+:loom_accel_pkg::MEM_Y_PAD_1_W];
  assign x_pad0 = insn[loom_accel_pkg::MEM_X_PAD_0_LSB+:loom_accel_pkg::MEM_X_PAD_0_W];
  assign x_pad1 = insn[loom_accel_pkg::MEM_X_PAD_1_LSB+:loom_accel_pkg::MEM_X_PAD_1_W];
endmodule
