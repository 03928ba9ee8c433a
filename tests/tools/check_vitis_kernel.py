#!/usr/bin/env python3
"""Checks the folder `loom hw-kernel` wrote: kernel.xml parses and its argument offsets, ports and
bus width equal what the generated SystemVerilog package (the register map) says; the packaging
script names every register at the package's offset; the connectivity file links the master."""
import re
import sys
import xml.etree.ElementTree as ET

out, memory = sys.argv[1], sys.argv[2]
pkg = open(f"{out}/rtl/loom_accel_pkg.sv").read()
params = {m.group(1): int(m.group(2)) for m in re.finditer(r"localparam int (\w+) = (\d+);", pkg)}
kernel = ET.parse(f"{out}/kernel.xml").getroot().find("kernel")
assert kernel.get("name") == "loom_accel", kernel.attrib
ports = {p.get("name"): p for p in kernel.find("ports")}
assert set(ports) == {"s_axi_control", "m_axi_gmem"}, ports
assert int(ports["m_axi_gmem"].get("dataWidth")) == params["BUS_BYTES"] * 8
args = {a.get("name"): a for a in kernel.find("args")}
assert int(args["insn_addr"].get("offset"), 16) == params["REG_INSN_ADDR_LO"]
assert int(args["insn_count"].get("offset"), 16) == params["REG_INSN_COUNT"]
assert args["insn_addr"].get("port") == "m_axi_gmem" and args["insn_addr"].get("size") == "0x8"
tcl = open(f"{out}/package_kernel.tcl").read()
for name, reg in [("CTRL", "REG_CONTROL"), ("GIER", "REG_GIE"), ("IP_IER", "REG_IER"), ("IP_ISR", "REG_ISR"),
                  ("insn_addr", "REG_INSN_ADDR_LO"), ("insn_count", "REG_INSN_COUNT"), ("STATUS", "REG_STATUS"),
                  ("CYCLES", "REG_CYCLES_LO"), ("ERROR_INDEX", "REG_ERROR_INDEX")]:
    m = re.search(r"add_register -quiet %s \$block\]\nset_property address_offset (0x[0-9A-F]+)" % name, tcl)
    assert m and int(m.group(1), 16) == params[reg], (name, m and m.group(1), params[reg])
cfg = open(f"{out}/loom_accel.cfg").read()
assert f"sp=loom_accel_1.m_axi_gmem:{memory}" in cfg, cfg
print(f"vitis kernel files ok: {len(args)} arguments, bus {params['BUS_BYTES'] * 8} bits, memory {memory}")
