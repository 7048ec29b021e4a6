# Shared by the cross toolchain files (debian-cross-common.cmake, android-arm64-v8a.cmake); not a
# toolchain file itself.
#
# dlpack and dmlc-core are header-only: a target build takes them from the host (Debian's
# libdlpack-dev and libdmlc-dev) through a directory of links to just those two, so no other host
# header can leak into it. The link directory lives in the build tree (it is recreated by every
# configure, including CMake's own try_compile projects, which is harmless) and is appended to the
# C and C++ standard include directories, after any the including file set (the NDK lists its own);
# appended once, however often CMake reads the toolchain file.
set(_ember_host_headers "${CMAKE_BINARY_DIR}/ember-cross-host-headers")
foreach(_dir dlpack dmlc)
  if(NOT EXISTS /usr/include/${_dir})
    message(FATAL_ERROR "${CMAKE_CURRENT_LIST_FILE}: /usr/include/${_dir} is missing; install "
                        "libdlpack-dev and libdmlc-dev (header-only, used by the runtime)")
  endif()
  if(NOT EXISTS "${_ember_host_headers}/${_dir}")
    file(MAKE_DIRECTORY "${_ember_host_headers}")
    file(CREATE_LINK /usr/include/${_dir} "${_ember_host_headers}/${_dir}" SYMBOLIC)
  endif()
endforeach()
foreach(_lang C CXX)
  list(FIND CMAKE_${_lang}_STANDARD_INCLUDE_DIRECTORIES "${_ember_host_headers}" _found)
  if(_found EQUAL -1)
    list(APPEND CMAKE_${_lang}_STANDARD_INCLUDE_DIRECTORIES "${_ember_host_headers}")
  endif()
endforeach()
