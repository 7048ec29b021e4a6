# 32-bit ARMv7 hard-float Linux (Raspberry Pi OS 32-bit, BeagleBone, i.MX6, older boards) with
# Debian's gcc cross compiler (g++-arm-linux-gnueabihf, which defaults to armv7-a + VFPv3-D16,
# Thumb-2); tests run under qemu-arm. Artifacts for these boards: emberc --target
# "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon".
#   cmake -S . -B build/cross-armhf -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(EMBER_CROSS_TRIPLE arm-linux-gnueabihf)
set(EMBER_CROSS_QEMU qemu-arm)
# GCC notes that the passing of some std types changed in GCC 7.1: irrelevant here, and noisy.
set(CMAKE_CXX_FLAGS_INIT "-Wno-psabi")
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross-common.cmake)
