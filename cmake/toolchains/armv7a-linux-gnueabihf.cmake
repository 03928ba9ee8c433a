# Cross-compiling Loom's runtime-only build for 32-bit Arm Linux with hardware floating point
# (Zynq-7000: Pynq-Z1/Z2; Cortex-A9 with NEON) with Debian's crossbuild-essential-armhf:
#   cmake -S . -B build-armv7 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/armv7a-linux-gnueabihf.cmake -DLOOM_RUNTIME_ONLY=ON
# Programs built so run on the board, or here under qemu-arm -L /usr/arm-linux-gnueabihf.
set(LOOM_CROSS_TRIPLE arm-linux-gnueabihf)
set(CMAKE_SYSTEM_PROCESSOR armv7-a)
# Debian's armhf baseline is ARMv7-A with VFPv3-D16; the boards' Cortex-A9 has NEON.
set(LOOM_CROSS_FLAGS "-mcpu=cortex-a9 -mfpu=neon")
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
