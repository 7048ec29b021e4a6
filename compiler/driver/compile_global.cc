// The compiler as a runtime global, for the Python package (libember_compiler.so via ctypes):
//   ember.compile(model_path, out_dir, target, opt_level, input_shapes[, system_lib[, bindings]])
// input_shapes is "name=d0,d1;name2=..." and bindings "name=v;name2=v0,v1" (either may be
// empty); target "" means the host.
//   ember.quantize(args) -> report JSON: `emberc quantize`'s arguments, one per line.
#include <ember/compiler/driver.h>
#include <ember/compiler/ir/tensor_type.h>
#include <ember/compiler/quantize.h>
#include <ember/runtime/registry.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

namespace ember {
namespace compiler {
namespace {

EMBER_REGISTER_GLOBAL("ember.compile")
    .set_body([](runtime::TVMArgs args, runtime::TVMRetValue* rv) {
      if (args.size() < 5 || args.size() > 7) {
        throw CompileError(
            "ember.compile expects (model_path, out_dir, target, opt_level, input_shapes"
            "[, system_lib[, bindings]]), got " +
            std::to_string(args.size()) + " arguments");
      }
      CompileOptions opt;
      opt.model_path = args[0].operator std::string();
      opt.out_dir = args[1].operator std::string();
      opt.target = args[2].operator std::string();
      if (opt.target == "llvm") opt.target.clear();
      opt.opt_level = args[3].operator int();
      opt.input_shapes = ParseInputShapeList(args[4].operator std::string());
      if (args.size() >= 6) opt.system_lib = args[5].operator bool();
      if (args.size() == 7) opt.bindings = ParseBindingList(args[6].operator std::string());
      Compile(opt);
      *rv = 0;
    });

EMBER_REGISTER_GLOBAL("ember.quantize")
    .set_body([](runtime::TVMArgs args, runtime::TVMRetValue* rv) {
      if (args.size() != 1) {
        throw CompileError("ember.quantize expects (args), the arguments one per line, got " +
                           std::to_string(args.size()) + " arguments");
      }
      std::vector<std::string> argv;
      const std::string all = args[0].operator std::string();
      for (size_t start = 0; start <= all.size();) {
        const size_t end = std::min(all.find('\n', start), all.size());
        argv.push_back(all.substr(start, end - start));
        start = end + 1;
      }
      if (all.empty()) argv.clear();
      QuantizeOptions opt = ParseQuantizeArgs(argv);
      opt.log = &std::cerr;
      *rv = Quantize(opt).Json();
    });

}  // namespace
}  // namespace compiler
}  // namespace ember
