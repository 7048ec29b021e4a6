# Debian packages of the install components, through CPack (`cpack -G DEB` in a build directory):
#   libember-runtime      runtime library and ember-run (component runtime); what a board needs
#   libember-runtime-dev  headers, static library, CMake package and pkg-config file (dev)
#   ember-compiler        emberc, the compiler library and headers (compiler; hosts only)
# A cross build packages for its own architecture (arm64, armhf).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ember)
set(CPACK_PACKAGE_VENDOR "Ember")
set(CPACK_PACKAGE_CONTACT "Ember maintainers <ember@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Ahead-of-time neural network compiler and small runtime")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_COMPONENTS_ALL runtime dev)
if(EMBER_BUILD_COMPILER)
  list(APPEND CPACK_COMPONENTS_ALL compiler)
endif()

# Debian's name for the target machine; dpkg on the build host would name the host's.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE armhf)
else()
  message(STATUS "Debian packages: no architecture name for ${CMAKE_SYSTEM_PROCESSOR}")
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libember-runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# The runtime links libc and libstdc++ (which brings libgcc_s) and nothing else. Written out rather
# than found by dpkg-shlibdeps, which cannot read a cross build's libraries: Debian 12's cross gcc
# needs glibc 2.34 and GCC 11's libstdc++ on the target (README, "Deploy to an ARM board").
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 11)")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "Ember runtime: loads and runs compiled model artifacts\n libember_runtime (TVM graph executor C ABI) and the ember-run command.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libember-runtime-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The public headers include <dlpack/dlpack.h>.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libember-runtime (= ${PROJECT_VERSION}), libdlpack-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Ember runtime development files\n Headers, static library, CMake package (find_package(Ember)) and pkg-config file (ember-runtime).")

set(CPACK_DEBIAN_COMPILER_PACKAGE_NAME ember-compiler)
set(CPACK_DEBIAN_COMPILER_PACKAGE_SECTION devel)
# Debian 12 names of the libraries libember_compiler.so links and of the linker emberc runs.
set(CPACK_DEBIAN_COMPILER_PACKAGE_DEPENDS
    "libember-runtime-dev (= ${PROJECT_VERSION}), libllvm19, lld-19, libonnx1, libprotobuf32")
set(CPACK_COMPONENT_COMPILER_DESCRIPTION
    "Ember compiler: ONNX to deployable artifacts\n emberc and libember_compiler (LLVM 19 code generation for x86-64, aarch64 and armv7).")

include(CPack)
