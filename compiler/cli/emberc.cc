// emberc: the compiler's command line (contract in DESIGN.md).
#include <ember/compiler/driver.h>
#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/tensor_type.h>
#include <ember/compiler/quantize.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: emberc compile MODEL.onnx -o OUTDIR [--target \"llvm [-mtriple=T] [-mcpu=C] "
    "[-mattr=A]\"]\n"
    "                      [--opt-level 0..3] [--input-shape NAME=d0,d1,...]...\n"
    "                      [--bind NAME=VALUE]... [--system-lib]\n"
    "                      [--dump-ir DIR] [-v] [--jobs N] [--tune] [--tuning-log FILE]\n"
    "\n"
    "Compiles an ONNX model into OUTDIR/graph.json, OUTDIR/lib.so (lib.o with --system-lib) and\n"
    "OUTDIR/params.bin for libember_runtime / ember-run.\n"
    "  -o OUTDIR              output directory (created if missing)\n"
    "  --target T             code generation target; default: the host\n"
    "                         (aarch64's int8 kernels are fastest with the dot product:\n"
    "                         -mattr=+dotprod or a CPU with it, e.g. -mcpu=cortex-a76;\n"
    "                         README, \"Using it\")\n"
    "  --opt-level N          0 = no fusion, 3 = everything (default 3)\n"
    "  --input-shape N=d,...  static shape for an input with dynamic dimensions (repeatable)\n"
    "  --bind N=V[,V...]      fix input N to this value at compile time (a deployment's sample\n"
    "                         rate, say): it becomes a constant, an If on it folds to one\n"
    "                         branch, and the artifact no longer has the input (repeatable)\n"
    "  --system-lib           emit an object that registers its kernels at static-init time\n"
    "  --dump-ir DIR          write the graph after each pass (.txt and Graphviz .dot)\n"
    "  -v                     print each pass's time, the threads used and the memory plan\n"
    "  --jobs N               threads that optimise and emit kernels (default: one per\n"
    "                         hardware thread; the output is the same for every N)\n"
    "  --tune                 time a few schedule parameter candidates per tunable workload on\n"
    "                         this machine (host target only), merge the winners into the tuning\n"
    "                         log and compile with them\n"
    "  --tuning-log FILE      compile with the winners in FILE; with --tune, the log to update\n"
    "                         (default $XDG_CACHE_HOME or ~/.cache: ember/tuning.log)\n"
    "  --tune-candidates N    candidates timed per workload, the default included (default 6;\n"
    "                         0 = all)\n"
    "  --tune-repeat N        timed repeats per candidate, the best counts (default 3)\n"
    "\n"
    "On a board (README, \"Benchmark on boards\"): --target is the board's; tuning-log records\n"
    "are keyed by the board's CPU (its /proc/cpuinfo), so another board with that CPU reuses "
    "them.\n"
    "  --remote USER@HOST[:PORT]  with --tune, time candidates there (ssh; adb:SERIAL for an\n"
    "                         Android device); without, compile with that CPU's records\n"
    "  --fleet FILE           with --tune, tune on every board of this hosts file (ember-bench's\n"
    "                         format) whose architecture is the target's, one after another;\n"
    "                         boards with one CPU measure once; compiles with the first's records\n"
    "  --remote-dir DIR       the board's working directory (default /tmp/ember-remote-$USER)\n"
    "  --runtime-dir DIR      where an ember-run for the board's arch was built (repeatable;\n"
    "                         DIR/cross-ARCH, DIR/ARCH or DIR; EMBER_RUNTIME_DIRS adds more)\n"
    "  --remote-exec-wrapper \"CMD ARGS\"  put before the board's ember-run (e.g. qemu-user)\n"
    "  --ssh-config FILE      ssh -F FILE (default EMBER_SSH_CONFIG, else ssh's own)\n"
    "  --ssh-option OPT       ssh -o OPT (repeatable)\n"
    "\n"
    "usage: emberc quantize MODEL.onnx -o MODEL_INT8.onnx --calibration DIR\n"
    "                      [--method minmax|percentile] [--percentile P]\n"
    "                      [--per-tensor-weights] [--exclude NODE]...\n"
    "                      [--input-shape NAME=d0,d1,...]... [--report FILE.tsv|FILE.json]\n"
    "\n"
    "Post-training static quantization: writes a standard QDQ model (ONNX Runtime runs it too;\n"
    "emberc compiles its Conv and MatMul layers into exact integer QLinearConv/QLinearMatMul):\n"
    "uint8 activations per tensor, int8 weights per output channel (7-bit magnitude, so ORT's\n"
    "AVX2 kernels stay exact), int32 biases, for Conv, MatMul and Gemm with constant weights;\n"
    "BatchNormalization after a Conv is folded into it first. Ranges come from running the\n"
    "float model with Ember on the samples; then prints each quantized layer's error against\n"
    "fp32 on them (Ember's int8 run against its fp32 run).\n"
    "  --calibration DIR      samples: DIR/SAMPLE/INPUT.npy (one directory per sample), or for a\n"
    "                         one-input model DIR/*.npy, each file one sample or a batch (K, ...)\n"
    "  --method M             minmax (default): each tensor's min and max over the samples;\n"
    "                         percentile: clip each tail at --percentile of its values\n"
    "  --percentile P         for --method percentile (default 99.99; implies it)\n"
    "  --per-tensor-weights   one weight scale per tensor instead of per output channel\n"
    "  --exclude NODE         keep this node float: no QDQ on its inputs or weights (repeatable)\n"
    "  --input-shape N=d,...  static shape for an input with dynamic dimensions (repeatable)\n"
    "  --report FILE          write the per-layer error table as .tsv or .json\n";

int Fail(const std::string& msg) {
  std::string one_line = msg;
  for (char& c : one_line) {
    if (c == '\n') c = ' ';
  }
  std::cerr << "emberc: error: " << one_line << "\n";
  return 1;
}

int Quantize(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      }
    }
    ember::compiler::QuantizeOptions opt = ember::compiler::ParseQuantizeArgs(args);
    opt.log = &std::cerr;
    std::cout << ember::compiler::Quantize(opt).Table() << "wrote " << opt.output_path << "\n";
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using ember::compiler::CompileOptions;
  if (argc < 2) return Fail("no command given; run 'emberc --help'");
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "quantize") return Quantize(argc, argv);
  if (cmd != "compile") {
    return Fail("unknown command '" + cmd + "' (valid: compile, quantize, --help)");
  }
  CompileOptions opt;
  opt.log = &std::cerr;
  try {
    for (int i = 2; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const char* flag) -> std::string {
        if (i + 1 >= argc)
          throw ember::compiler::CompileError(std::string(flag) + " needs a value");
        return argv[++i];
      };
      if (a == "-o" || a == "--output") {
        opt.out_dir = value("-o");
      } else if (a == "--target") {
        opt.target = value("--target");
      } else if (a == "--opt-level") {
        std::string v = value("--opt-level");
        if (v.size() != 1 || v[0] < '0' || v[0] > '3') {
          throw ember::compiler::CompileError("--opt-level must be 0, 1, 2 or 3, got '" + v + "'");
        }
        opt.opt_level = v[0] - '0';
      } else if (a == "--bind") {
        auto parsed = ember::compiler::ParseBinding(value("--bind"));
        if (!opt.bindings.insert(parsed).second) {
          return Fail("--bind " + parsed.first + " is given twice");
        }
      } else if (a == "--input-shape") {
        auto parsed = ember::compiler::ParseInputShape(value("--input-shape"));
        opt.input_shapes[parsed.first] = parsed.second;
      } else if (a == "--system-lib") {
        opt.system_lib = true;
      } else if (a == "--dump-ir") {
        opt.dump_dir = value("--dump-ir");
      } else if (a == "--tune") {
        opt.tune = true;
      } else if (a == "--remote") {
        opt.remote.board = value("--remote");
      } else if (a == "--fleet") {
        opt.fleet_file = value("--fleet");
      } else if (a == "--remote-dir") {
        opt.remote.remote_dir = value("--remote-dir");
      } else if (a == "--runtime-dir") {
        opt.remote.runtime_dirs.push_back(value("--runtime-dir"));
      } else if (a == "--remote-exec-wrapper") {
        opt.remote.exec_wrapper = value("--remote-exec-wrapper");
      } else if (a == "--ssh-config") {
        opt.remote.ssh_config = value("--ssh-config");
      } else if (a == "--ssh-option") {
        opt.remote.ssh_options.push_back(value("--ssh-option"));
      } else if (a == "--tuning-log") {
        opt.tuning_log = value("--tuning-log");
      } else if (a == "--tune-candidates" || a == "--tune-repeat") {
        std::string v = value(a.c_str());
        int n = -1;
        if (v.size() <= 4 && !v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
          n = std::stoi(v);
        }
        if (n < 0 || (a == "--tune-repeat" && n < 1)) {
          throw ember::compiler::CompileError(a + " must be an integer in " +
                                              (a == "--tune-repeat" ? "1" : "0") + "..9999, got '" +
                                              v + "'");
        }
        (a == "--tune-repeat" ? opt.tune_repeat : opt.tune_candidates) = n;
      } else if (a == "--jobs" || a == "-j") {
        std::string v = value("--jobs");
        int n = 0;
        if (v.size() <= 4 && !v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
          n = std::stoi(v);
        }
        if (n < 1) {
          throw ember::compiler::CompileError("--jobs must be an integer in 1..9999, got '" + v +
                                              "'");
        }
        opt.jobs = n;
      } else if (a == "-v" || a == "--verbose") {
        opt.verbose = true;
      } else if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (!a.empty() && a[0] == '-') {
        return Fail("unknown option '" + a + "'; run 'emberc --help'");
      } else if (opt.model_path.empty()) {
        opt.model_path = a;
      } else {
        return Fail("unexpected argument '" + a + "' (model already given: " + opt.model_path +
                    ")");
      }
    }
    if (opt.model_path.empty())
      return Fail("no model given; usage: emberc compile MODEL.onnx -o OUTDIR");
    if (opt.out_dir.empty()) return Fail("no output directory given (-o OUTDIR)");
    ember::compiler::Compile(opt);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}
