#include <ember/runtime/module.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ndarray_test_util.h"
#include "scoped_chdir.h"

namespace ember::runtime {
namespace {

using test_util::ErrorOf;
using test_util::Floats;
using test_util::ScopedChdir;
using test_util::Values;

TEST(Module, LoadsDsoAndCallsKernels) {
  Module lib = Module::LoadFromFile(EMBER_TEST_KERNELS_PATH);
  EXPECT_STREQ(lib->type_key(), "library");
  PackedFunc add = lib.GetFunction("add");
  ASSERT_NE(add, nullptr);
  NDArray a = Floats({2, 2}, {1, 2, 3, 4});
  NDArray b = Floats({2, 2}, {10, 20, 30, 40});
  NDArray out = NDArray::Empty({2, 2}, kFloat32, kCPU);
  add(a, b, out);
  EXPECT_EQ(Values(out), (std::vector<float>{11, 22, 33, 44}));

  PackedFunc relu = lib.GetFunction("relu");
  NDArray x = Floats({4}, {-1, 2, -3, 4});
  NDArray y = NDArray::Empty({4}, kFloat32, kCPU);
  relu(x, y);
  EXPECT_EQ(Values(y), (std::vector<float>{0, 2, 0, 4}));

  PackedFunc dense = lib.GetFunction("dense");
  NDArray xd = Floats({1, 3}, {1, 2, 3});
  NDArray w = Floats({2, 3}, {1, 0, 0, 1, 1, 1});
  NDArray yd = NDArray::Empty({1, 2}, kFloat32, kCPU);
  dense(xd, w, yd);
  EXPECT_EQ(Values(yd), (std::vector<float>{1, 6}));

  EXPECT_EQ(lib.GetFunction("add_one")(41).As<int>(), 42);
  PackedFunc main_fn = lib.GetFunction("__tvm_main__");
  ASSERT_NE(main_fn, nullptr);
  main_fn(a, a, out);
  EXPECT_EQ(Values(out), (std::vector<float>{2, 4, 6, 8}));
}

TEST(Module, FunctionKeepsLibraryLoaded) {
  PackedFunc add_one;
  {
    Module lib = Module::LoadFromFile(EMBER_TEST_KERNELS_PATH);
    add_one = lib.GetFunction("add_one");
  }
  EXPECT_EQ(add_one(1).As<int>(), 2);
}

TEST(Module, KernelErrorsPropagateWithTheirMessage) {
  Module lib = Module::LoadFromFile(EMBER_TEST_KERNELS_PATH);
  NDArray a = Floats({2}, {1, 2});
  NDArray b = Floats({3}, {1, 2, 3});
  EXPECT_EQ(ErrorOf([&] { lib.GetFunction("add")(a, b, a); }), "add: shape mismatch");
  EXPECT_EQ(ErrorOf([&] { lib.GetFunction("add")(a, b); }),
            "add: expected 3 arguments (a, b, out)");
  EXPECT_EQ(ErrorOf([&] { lib.GetFunction("dense")(a, a, a); }), "dense: expected 2-D tensors");
}

TEST(Module, MissingSymbolAndImportsAndEnvironment) {
  Module lib = Module::LoadFromFile(EMBER_TEST_KERNELS_PATH);
  EXPECT_EQ(lib.GetFunction("no_such_kernel"), nullptr);
  // call_env reaches functions through __tvm_module_ctx: the library, its imports, then globals.
  PackedFunc call_env = lib.GetFunction("call_env");
  EXPECT_EQ(call_env("add_one", 1).As<int>(), 2);
  Registry::Register("test.module.Triple", true).set_body_typed([](int x) { return 3 * x; });
  EXPECT_EQ(call_env("test.module.Triple", 5).As<int>(), 15);
  std::string err = ErrorOf([&] { call_env("nowhere", 1); });
  EXPECT_NE(err.find("cannot find function \"nowhere\""), std::string::npos) << err;
  Module other = Module::LoadFromFile(EMBER_TEST_KERNELS_PATH);
  lib.Import(other);
  EXPECT_EQ(lib->imports().size(), 1u);
  EXPECT_NE(ErrorOf([&] { other.Import(lib); }).find("cycle"), std::string::npos);
}

TEST(Module, LoadErrorsNameTheFile) {
  std::string err = ErrorOf([] { Module::LoadFromFile("/nonexistent/lib.so"); });
  EXPECT_NE(err.find("cannot load library /nonexistent/lib.so"), std::string::npos) << err;
  std::string text = ::testing::TempDir() + "/ember_not_a_library.so";
  {
    std::ofstream f(text);
    f << "this is not an ELF file\n";
  }
  err = ErrorOf([&] { Module::LoadFromFile(text); });
  EXPECT_NE(err.find("cannot load library " + text), std::string::npos) << err;
  std::remove(text.c_str());
  err = ErrorOf([] { Module::LoadFromFile("model.weird"); });
  EXPECT_NE(err.find("unknown format \"weird\""), std::string::npos) << err;
  err = ErrorOf([] { Module::LoadFromFile("noextension"); });
  EXPECT_NE(err.find("its name has no extension (.so) to choose a loader by"), std::string::npos)
      << err;
  EXPECT_EQ(err.find("Check failed"), std::string::npos) << err;
  std::string dir = ::testing::TempDir();
  err = ErrorOf([&] { Module::LoadFromFile(dir); });
  EXPECT_NE(err.find("cannot load module " + dir + ": it is a directory"), std::string::npos)
      << err;
}

// The ELF header of a shared library for another machine: dlopen calls it a missing file.
std::string WriteForeignElfHeader(uint16_t machine) {
  constexpr size_t kElf64HeaderSize = 64;
  constexpr size_t kMachineOffset = 18;
  std::string header(kElf64HeaderSize, '\0');
  header.replace(0, 4,
                 "\x7f"
                 "ELF");
  header[4] = 2;   // 64-bit
  header[5] = 1;   // little-endian
  header[6] = 1;   // ELF version 1
  header[16] = 3;  // ET_DYN: a shared object
  header[kMachineOffset] = static_cast<char>(machine & 0xff);
  header[kMachineOffset + 1] = static_cast<char>(machine >> 8);
  std::string path = ::testing::TempDir() + "/ember_foreign_" + std::to_string(machine) + ".so";
  std::ofstream(path, std::ios::binary) << header;
  return path;
}

[[maybe_unused]] constexpr uint16_t kX86_64 = 62;  // ELF e_machine values
[[maybe_unused]] constexpr uint16_t kAarch64 = 183;

TEST(Module, LibraryForAnotherMachineSaysWhichMachine) {
  // A library for some other machine than this test's: aarch64 on x86-64, x86-64 elsewhere.
#if defined(__x86_64__)
  const uint16_t foreign = kAarch64;
  const std::string expected = "built for aarch64, this machine is x86-64";
#elif defined(__aarch64__)
  const uint16_t foreign = kX86_64;
  const std::string expected = "built for x86-64, this machine is aarch64";
#elif defined(__arm__)
  const uint16_t foreign = kX86_64;
  const std::string expected = "built for x86-64, this machine is arm (32-bit)";
#else
  const uint16_t foreign = kX86_64;
  const std::string expected = "built for x86-64, this machine is";
#endif
  std::string path = WriteForeignElfHeader(foreign);
  std::string err = ErrorOf([&] { Module::LoadFromFile(path); });
  EXPECT_NE(err.find("cannot load library " + path + ": " + expected), std::string::npos) << err;
  std::remove(path.c_str());
}

TEST(Module, BareFileNameIsAFileInTheCurrentDirectory) {
  std::filesystem::path lib(EMBER_TEST_KERNELS_PATH);
  ScopedChdir in_lib_dir(lib.parent_path());
  Module bare = Module::LoadFromFile(lib.filename().string());
  EXPECT_EQ(bare.GetFunction("add_one")(41).As<int>(), 42);
  Module dotted = Module::LoadFromFile("./" + lib.filename().string());
  EXPECT_EQ(dotted.GetFunction("add_one")(1).As<int>(), 2);
  // A bare name that is not in the current directory is not looked up in the library path.
  std::string err = ErrorOf([] { Module::LoadFromFile("libc.so.6", "so"); });
  EXPECT_NE(err.find("cannot load library libc.so.6"), std::string::npos) << err;
}

// A module rebuilt from the blob: answers "greeting" with the bytes it was given.
class BlobModuleNode : public ModuleNode {
 public:
  explicit BlobModuleNode(std::string text) : text_(std::move(text)) {}
  const char* type_key() const final { return "test_blob"; }
  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>&) final {
    if (name != "greeting") return PackedFunc();
    std::string text = text_;
    return PackedFunc([text](TVMArgs, TVMRetValue* rv) { *rv = text; });
  }

 private:
  std::string text_;
};

EMBER_REGISTER_GLOBAL("runtime.module.loadbinary_test_blob").set_body_typed([](void* reader) {
  std::string text = static_cast<ByteReader*>(reader)->ReadString("test_blob text");
  return Module(make_object<BlobModuleNode>(text));
});

TEST(Module, EmbeddedBlobBuildsTheImportTree) {
  Module root = Module::LoadFromFile(EMBER_TEST_KERNELS_BLOB_PATH);
  EXPECT_STREQ(root->type_key(), "test_blob");
  EXPECT_EQ(root.GetFunction("greeting")().As<std::string>(), "hello");
  ASSERT_EQ(root->imports().size(), 1u);
  EXPECT_STREQ(root->imports()[0]->type_key(), "library");
  EXPECT_EQ(root.GetFunction("add_one"), nullptr);
  EXPECT_EQ(root.GetFunction("add_one", true)(1).As<int>(), 2);
}

TEST(Module, GlobalsForModules) {
  Module lib = (*Registry::Get("runtime.ModuleLoadFromFile"))(EMBER_TEST_KERNELS_PATH, "");
  EXPECT_EQ((*Registry::Get("runtime.ModuleGetTypeKey"))(lib).As<std::string>(), "library");
  EXPECT_EQ((*Registry::Get("runtime.ModuleImportsSize"))(lib).As<int>(), 0);
  EXPECT_NE(ErrorOf([&] { lib->SaveToFile("x.so", "so"); }).find("does not support SaveToFile"),
            std::string::npos);
}

}  // namespace
}  // namespace ember::runtime
