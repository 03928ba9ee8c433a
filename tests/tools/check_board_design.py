#!/usr/bin/env python3
"""Checks the folder `loom hw-board` wrote against what the hardware fixes independently: the
register window the kernel's 12-bit AXI4-Lite addresses span, the PL windows and interrupt numbers
of the Zynq TRMs (UG585, UG1085), the HP ports' widths, and the bus width of the generated
SystemVerilog package; and that the overlay, the block design and board.json agree on every name
and address. With dtc, the overlay compiles and leaves the base tree's labels as fixups.
usage: check_board_design.py OUT BOARD CONFIG.json"""
import json
import re
import shutil
import subprocess
import sys

out, board, config_path = sys.argv[1:4]
# Per processing system: the GP port's PL window, the first fabric interrupt's GIC number, the
# widest HP port, the amba bus's #address-cells and the GIC's label in the base device tree.
zynq7000 = dict(window=(0x40000000, 0x80000000), spi=61, hp_max=64, cells=1, gic="intc", ip="processing_system7")
mpsoc = dict(window=(0xA0000000, 0xB0000000), spi=121, hp_max=128, cells=2, gic="gic", ip="zynq_ultra_ps_e")
ps = {"pynq-z1": zynq7000, "zcu104": mpsoc, "kv260": mpsoc}[board]

pkg = open(f"{out}/rtl/loom_accel_pkg.sv").read()
params = {m.group(1): int(m.group(2)) for m in re.finditer(r"localparam int (\w+) = (\d+);", pkg)}
bus_bits = params["BUS_BYTES"] * 8
kernel = open(f"{out}/rtl/loom_accel_kernel.sv").read()
awaddr_bits = int(re.search(r"\[(\d+):0\]\s+s_axi_control_awaddr", kernel).group(1)) + 1
window = 1 << awaddr_bits

# board.json: the config's fields unchanged, plus the zynq section.
given = json.load(open(config_path))
cfg = json.load(open(f"{out}/board.json"))
for k, v in given.items():
    assert cfg[k] == v, (k, cfg[k], v)
zynq = cfg["zynq"]
assert set(zynq) == {"uio", "udmabuf", "dma_bytes"}, zynq
assert zynq["dma_bytes"] > 0 and zynq["dma_bytes"] % 4096 == 0, zynq

# The overlay.
dts = open(f"{out}/loom_accel.dtso").read()
assert dts.startswith("//") and "/plugin/;" in dts
assert re.search(r"target = <&fpga_full>;\s*__overlay__ \{\s*firmware-name = \"loom_accel.bit.bin\";", dts)
node = re.search(r"(\w[\w,.+-]*)@([0-9a-f]+) \{\s*compatible = \"generic-uio\";\s*reg = <([^>]*)>;\s*"
                 r"interrupt-parent = <&(\w+)>;\s*interrupts = <0 (\d+) 4>;", dts)
assert node, "no generic-uio node"
name, unit, reg, parent, spi = node.groups()
assert name == zynq["uio"], (name, zynq)
assert re.search(r"#address-cells = <%d>;\s*#size-cells = <%d>;" % (ps["cells"], ps["cells"]), dts)
reg = [int(c, 16) for c in reg.split()]
assert len(reg) == 2 * ps["cells"], reg
cells = ps["cells"]
base = sum(c << (32 * (cells - 1 - i)) for i, c in enumerate(reg[:cells]))
size = sum(c << (32 * (cells - 1 - i)) for i, c in enumerate(reg[cells:]))
assert int(unit, 16) == base, (unit, base)
assert ps["window"][0] <= base and base + size <= ps["window"][1], hex(base)
assert size == window, (size, window)
assert parent == ps["gic"], parent
assert int(spi) + 32 == ps["spi"], spi
buf = re.search(r"(\w+) \{\s*compatible = \"ikwzm,u-dma-buf\";\s*device-name = \"(\w+)\";\s*size = <(0x[0-9a-f]+)>;", dts)
assert buf and buf.group(2) == zynq["udmabuf"] and int(buf.group(3), 16) == zynq["dma_bytes"], buf and buf.groups()

# The block design: the same register address, the HP port as wide as the bus allows.
tcl = open(f"{out}/block_design.tcl").read()
m = re.search(r"assign_bd_address -target_address_space \[get_bd_addr_spaces ps/Data\] -offset (0x[0-9a-f]+) "
              r"-range (\d+)K \[get_bd_addr_segs accel/s_axi_control/\*\]", tcl)
assert m and int(m.group(1), 16) == base and int(m.group(2)) * 1024 == window, m and m.groups()
hp = re.search(r"(PCW_S_AXI_HP0_DATA_WIDTH|PSU__SAXIGP2__DATA_WIDTH) \{(\d+)\}", tcl)
assert hp and int(hp.group(2)) == max(32, min(bus_bits, ps["hp_max"])), (hp and hp.group(2), bus_bits)
assert f"[latest_ip {ps['ip']}] ps]" in tcl
assert "create_bd_cell -type module -reference loom_accel_bd accel" in tcl
assert re.search(r"connect_bd_net \[get_bd_pins accel/interrupt\] \[get_bd_pins ps/(IRQ_F2P|pl_ps_irq0)\]", tcl)

# The wrapper's bus ports are the package's width.
v = open(f"{out}/rtl/loom_accel_bd.v").read()
for port, bits in [("m_axi_gmem_rdata", bus_bits), ("m_axi_gmem_wdata", bus_bits), ("m_axi_gmem_wstrb", bus_bits // 8)]:
    assert re.search(r"wire \[%d:0\] %s[,\n]" % (bits - 1, port), v), port

dtc = shutil.which("dtc")
if dtc:
    subprocess.run([dtc, "-@", "-q", "-I", "dts", "-O", "dtb", "-o", f"{out}/loom_accel.dtbo", f"{out}/loom_accel.dtso"],
                   check=True)
    back = subprocess.run([dtc, "-q", "-I", "dtb", "-O", "dts", f"{out}/loom_accel.dtbo"], check=True,
                          capture_output=True, text=True).stdout
    fixups = re.search(r"__fixups__ \{([^}]*)\}", back).group(1)
    for label in ("fpga_full", "amba", ps["gic"]):
        assert re.search(r"\b%s = " % label, fixups), (label, fixups)
print(f"board design ok: {board}, registers {base:#x}+{size:#x}, SPI {ps['spi']}, HP {hp.group(2)} bits, "
      f"uio {zynq['uio']}, {zynq['dma_bytes'] >> 20} MiB; dtc: {'compiled' if dtc else 'not installed'}")
