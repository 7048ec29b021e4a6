# GoogleTest for a cross build. Debian's libgtest-dev ships host libraries only, but it also ships
# the sources in /usr/src/googletest; build those for the target inside this build tree and give
# them the names find_package(GTest) would (GTest::gtest, GTest::gtest_main).
set(EMBER_GOOGLETEST_SOURCE_DIR /usr/src/googletest CACHE PATH
    "GoogleTest sources built for the target in cross builds")
if(NOT EXISTS "${EMBER_GOOGLETEST_SOURCE_DIR}/CMakeLists.txt")
  message(FATAL_ERROR "Cross build with tests: no GoogleTest sources in ${EMBER_GOOGLETEST_SOURCE_DIR} "
                      "(Debian's libgtest-dev installs them); pass -DEMBER_GOOGLETEST_SOURCE_DIR=<dir> "
                      "or -DEMBER_BUILD_TESTS=OFF")
endif()
set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
add_subdirectory(${EMBER_GOOGLETEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
foreach(lib gtest gtest_main)
  if(NOT TARGET GTest::${lib})
    add_library(GTest::${lib} ALIAS ${lib})
  endif()
endforeach()
