#include "link.h"

#include <ember/compiler/ir/tensor_type.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>

#include <fstream>
#include <iterator>
#include <optional>

#ifndef EMBER_LLD_DEFAULT
#define EMBER_LLD_DEFAULT "ld.lld-19"
#endif

namespace ember::compiler::codegen {

namespace {

void RunLinker(const std::string& linker, std::vector<std::string> flags,
               const std::vector<std::string>& obj_paths, const std::string& out_path) {
  const std::string lld = linker.empty() ? EMBER_LLD_DEFAULT : linker;
  auto found = llvm::sys::findProgramByName(lld);
  if (!found) {
    throw CompileError("linker '" + lld + "' not found (set EMBER_LLD to the path of ld.lld-19)");
  }
  std::string err_file = out_path + ".link.log";
  std::vector<llvm::StringRef> argv = {*found};
  for (const std::string& f : flags) argv.push_back(f);
  argv.push_back("-o");
  argv.push_back(out_path);
  for (const std::string& o : obj_paths) argv.push_back(o);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(err_file),
                                                llvm::StringRef(err_file)};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(*found, argv, std::nullopt, redirects, 0, 0, &msg);
  std::ifstream logf(err_file);
  std::string log((std::istreambuf_iterator<char>(logf)), std::istreambuf_iterator<char>());
  llvm::sys::fs::remove(err_file);
  if (rc != 0) {
    throw CompileError("linking " + out_path + " with " + *found + " failed (" +
                       (msg.empty() ? "exit " + std::to_string(rc) : msg) + "): " + log);
  }
}

}  // namespace

void LinkShared(const std::string& linker, const std::vector<std::string>& obj_paths,
                const std::string& out_path) {
  RunLinker(linker, {"-shared", "--eh-frame-hdr", "-z", "noexecstack"}, obj_paths, out_path);
}

void LinkRelocatable(const std::string& linker, const std::vector<std::string>& obj_paths,
                     const std::string& out_path) {
  RunLinker(linker, {"-r"}, obj_paths, out_path);
}

}  // namespace ember::compiler::codegen
