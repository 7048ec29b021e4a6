# 64-bit ARM Linux (Raspberry Pi 3/4/5 with a 64-bit OS, Jetson, Graviton, most ARM boards) with
# Debian's gcc cross compiler (g++-aarch64-linux-gnu); tests run under qemu-aarch64.
#   cmake -S . -B build/cross-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EMBER_CROSS_TRIPLE aarch64-linux-gnu)
set(EMBER_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross-common.cmake)
