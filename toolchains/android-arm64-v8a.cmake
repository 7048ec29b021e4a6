# Android, 64-bit ARM (arm64-v8a), through the NDK's own toolchain file. Not exercised by this
# project's tests (no NDK or device in CI); see "Deploy to an ARM board" in README.md.
#   export ANDROID_NDK=/path/to/android-ndk-r26d
#   cmake -S . -B build/android-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=toolchains/android-arm64-v8a.cmake
# Overridable with -D: ANDROID_PLATFORM (default android-24), ANDROID_STL (default c++_static, so
# libember_runtime.so and ember-run need no libc++_shared.so beside them).

if(NOT DEFINED ANDROID_NDK OR ANDROID_NDK STREQUAL "")
  set(ANDROID_NDK "$ENV{ANDROID_NDK}")
endif()
if(ANDROID_NDK STREQUAL "" AND NOT "$ENV{ANDROID_NDK_HOME}" STREQUAL "")
  set(ANDROID_NDK "$ENV{ANDROID_NDK_HOME}")
endif()
if(ANDROID_NDK STREQUAL "")
  message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: ANDROID_NDK is not set; export ANDROID_NDK=<NDK "
                      "directory> (r23 or newer) or pass -DANDROID_NDK=<dir>")
endif()
set(_ember_ndk_toolchain "${ANDROID_NDK}/build/cmake/android.toolchain.cmake")
if(NOT EXISTS "${_ember_ndk_toolchain}")
  message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: ANDROID_NDK=${ANDROID_NDK} holds no "
                      "build/cmake/android.toolchain.cmake; is it an Android NDK directory?")
endif()

set(ANDROID_ABI arm64-v8a)
if(NOT DEFINED ANDROID_PLATFORM)
  set(ANDROID_PLATFORM android-24)
endif()
if(NOT DEFINED ANDROID_STL)
  set(ANDROID_STL c++_static)
endif()
include("${_ember_ndk_toolchain}")

include("${CMAKE_CURRENT_LIST_DIR}/host-header-deps.cmake")

# Neither Google Benchmark nor a way to run tests exists for the device here; adb users can turn
# EMBER_BUILD_TESTS on (GoogleTest is then built from /usr/src/googletest) and push the binaries.
set(EMBER_BUILD_BENCH OFF CACHE BOOL "Google Benchmark programs")
set(EMBER_BUILD_TESTS OFF CACHE BOOL "GoogleTest suites")
