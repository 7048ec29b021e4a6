# Shared part of the Debian gcc cross toolchains (aarch64-linux-gnu.cmake, arm-linux-gnueabihf.cmake).
# The including file sets EMBER_CROSS_TRIPLE (gcc's prefix), CMAKE_SYSTEM_PROCESSOR and EMBER_CROSS_QEMU.
#
# What it arranges:
#   - the compilers ${EMBER_CROSS_TRIPLE}-gcc/g++ and the target's sysroot /usr/${EMBER_CROSS_TRIPLE},
#     searched for libraries, headers and packages only (never the host's /usr/lib);
#   - dlpack and dmlc-core, which are header-only, from the host's /usr/include, through a directory
#     holding links to just those two, so no other host header can leak into a target build;
#   - CMAKE_CROSSCOMPILING_EMULATOR = qemu-user with -L <sysroot>, so ctest, gtest_discover_tests
#     and build-time helper programs run the target binaries;
#   - EMBER_BUILD_BENCH off by default: Debian ships Google Benchmark for the host only.

set(CMAKE_SYSTEM_NAME Linux)

set(EMBER_CROSS_SYSROOT /usr/${EMBER_CROSS_TRIPLE})
find_program(EMBER_CROSS_CC ${EMBER_CROSS_TRIPLE}-gcc)
find_program(EMBER_CROSS_CXX ${EMBER_CROSS_TRIPLE}-g++)
if(NOT EMBER_CROSS_CC OR NOT EMBER_CROSS_CXX)
  message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: ${EMBER_CROSS_TRIPLE}-gcc/g++ not found; install "
                      "Debian's g++-${EMBER_CROSS_TRIPLE} (scripts/bootstrap.sh does)")
endif()
set(CMAKE_C_COMPILER ${EMBER_CROSS_CC})
set(CMAKE_CXX_COMPILER ${EMBER_CROSS_CXX})

set(CMAKE_FIND_ROOT_PATH ${EMBER_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

include(${CMAKE_CURRENT_LIST_DIR}/host-header-deps.cmake)

find_program(EMBER_CROSS_QEMU_BIN ${EMBER_CROSS_QEMU})
if(EMBER_CROSS_QEMU_BIN)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${EMBER_CROSS_QEMU_BIN};-L;${EMBER_CROSS_SYSROOT}")
else()
  message(WARNING "${EMBER_CROSS_QEMU} not found (Debian package qemu-user): target programs cannot "
                  "run on this host, so tests and build-time helpers will fail")
endif()

set(EMBER_BUILD_BENCH OFF CACHE BOOL "Google Benchmark programs (Debian ships the library for the host only)")
