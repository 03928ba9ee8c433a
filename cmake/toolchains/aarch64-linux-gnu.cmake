# Cross-compiling Loom's runtime-only build for 64-bit Arm Linux (Zynq UltraScale+: Ultra96, ZCU104,
# Kria KV260; Cortex-A53) with Debian's crossbuild-essential-arm64:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DLOOM_RUNTIME_ONLY=ON
# Programs built so run on the board, or here under qemu-aarch64 -L /usr/aarch64-linux-gnu.
set(LOOM_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
