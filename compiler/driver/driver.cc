// Compile: import, the pass pipeline (timed, optionally dumped), fusion, kernel build, artifact.
#include <ember/compiler/backend.h>
#include <ember/compiler/codegen.h>
#include <ember/compiler/driver.h>
#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/subgraph.h>
#include <ember/compiler/target.h>
#include <ember/compiler/transform.h>
#include <ember/runtime/c_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>

#include "autotune/remote_timer.h"
#include "autotune/tuner.h"
#include "autotune/tuning_log.h"
#include "driver/control_flow_scheduler.h"
#include "driver/graph_passes.h"
#include "driver/tuning_boards.h"
#include "schedule/table_strategy.h"
#include "schedule/tuning_board.h"

namespace ember {
namespace compiler {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw CompileError("cannot write " + path.string());
}

std::string GroupsText(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::ostringstream os;
  for (const FusedGroup& fg : groups) {
    os << fg.func_name << "(";
    for (size_t i = 0; i < fg.inputs.size(); ++i)
      os << (i ? ", " : "") << "%" << g.value(fg.inputs[i]).name;
    os << ") -> (";
    for (size_t i = 0; i < fg.outputs.size(); ++i) {
      os << (i ? ", " : "") << "%" << g.value(fg.outputs[i]).name;
    }
    os << ")\n";
    for (const Node* n : fg.nodes) os << "    " << n->op << "  # " << n->name << "\n";
  }
  return os.str();
}

// Values a model rounds at run time (a quantizer's round(x / scale), ONNX Round) need the float
// arithmetic before them exactly as written: one ulp before a rounding moves the quantized value
// by a whole step, and dynamically quantized models compound it layer after layer.
bool Rounds(const Node& n) {
  if (n.op == "Round") return true;
  for (const auto& [key, attr] : n.attrs) {
    const SubgraphPtr* branch = std::get_if<SubgraphPtr>(&attr);
    if (branch == nullptr || *branch == nullptr) continue;
    const std::vector<Node>& body = (*branch)->nodes;
    if (std::any_of(body.begin(), body.end(), Rounds)) return true;
  }
  return false;
}

// The groups with a rounding inside or after them: a node rounds (or a subgraph of it does), or
// one of its outputs reaches such a node. Groups whose results only reach the model's outputs
// (a segmentation head's Sigmoid after the last quantization) keep fast float arithmetic.
std::set<std::string> GroupsBeforeARounding(const Graph& graph,
                                            const std::vector<FusedGroup>& groups) {
  std::vector<bool> reaches(graph.values().size(), false);
  const std::vector<Node>& nodes = graph.nodes();
  auto rounds_or_reaches = [&](const Node& n) {
    if (Rounds(n)) return true;
    for (int out : n.outputs) {
      if (reaches[static_cast<size_t>(out)]) return true;
    }
    return false;
  };
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {  // nodes are in topological order
    if (!rounds_or_reaches(*it)) continue;
    for (int in : it->inputs) {
      if (in != kAbsentValue) reaches[static_cast<size_t>(in)] = true;
    }
  }
  std::set<std::string> exact;
  for (const FusedGroup& g : groups) {
    for (const Node* n : g.nodes) {
      if (rounds_or_reaches(*n)) exact.insert(g.func_name);
    }
  }
  return exact;
}

}  // namespace

std::string DefaultTuningLogPath(const std::string& out_dir) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg == '/') return (fs::path(xdg) / "ember" / "tuning.log").string();
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home == '/') {
    return (fs::path(home) / ".cache" / "ember" / "tuning.log").string();
  }
  return (fs::path(out_dir) / "tuning.log").string();
}

std::string LibraryFileName(bool system_lib) { return system_lib ? "lib.o" : "lib.so"; }

std::map<std::string, std::string> ParseBindingList(const std::string& specs) {
  std::map<std::string, std::string> out;
  std::stringstream ss(specs);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (!item.empty()) out.insert(ParseBinding(item));
  }
  return out;
}

std::map<std::string, std::vector<int64_t>> ParseInputShapeList(const std::string& specs) {
  std::map<std::string, std::vector<int64_t>> out;
  std::stringstream ss(specs);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    auto parsed = ParseInputShape(item);
    out[parsed.first] = parsed.second;
  }
  return out;
}

CompileStats Compile(const CompileOptions& opt) {
  auto t_start = Clock::now();
  std::ostream* log = opt.verbose && opt.log ? opt.log : nullptr;
  if (opt.opt_level < 0 || opt.opt_level > 3) {
    throw CompileError("--opt-level must be 0..3, got " + std::to_string(opt.opt_level));
  }
  if (opt.jobs < 0)
    throw CompileError("--jobs must be at least 1, got " + std::to_string(opt.jobs));
  Target target = opt.target.empty() ? Target::Host() : Target::Parse(opt.target);
  const std::vector<RemoteBoardOptions> boards = TuningBoards(opt, target);
  if (opt.tune && !target.is_host && boards.empty()) {
    throw CompileError(
        "--tune measures kernels on this machine, so it needs the host target; got "
        "--target \"" +
        opt.target +
        "\" (tune on the board with --remote USER@HOST, or compile for it with --tuning-log "
        "FILE from a tuning run there)");
  }
  // A board names the tuning log's records by its CPU, for tuning and for reading winners alike;
  // the artifact is compiled with the first board's.
  std::unique_ptr<autotune::RemoteKernelTimer> board;
  std::string board_cpu;
  if (!boards.empty()) {
    board = std::make_unique<autotune::RemoteKernelTimer>(boards[0]);
    board_cpu = board->BoardCpu();
    if (opt.log) *opt.log << "emberc: board " << boards[0].board << ": CPU " << board_cpu << "\n";
  }
  schedule::ScopedTuningBoard board_scope(board_cpu);
  // Read before the slow part, so that a malformed log fails the compile at once.
  std::unique_ptr<autotune::TuningLog> tuning;
  std::string tuning_path = opt.tuning_log;
  if (opt.tune && tuning_path.empty()) tuning_path = DefaultTuningLogPath(opt.out_dir);
  if (!tuning_path.empty()) {
    tuning = std::make_unique<autotune::TuningLog>(
        opt.tune ? autotune::TuningLog::LoadIfExists(tuning_path)
                 : autotune::TuningLog::Load(tuning_path));
  }
  if (!opt.dump_dir.empty()) fs::create_directories(opt.dump_dir);
  int step = 0;
  auto dump = [&](const std::string& name, const Graph& g) {
    if (opt.dump_dir.empty()) return;
    std::ostringstream prefix;
    prefix << std::setw(2) << std::setfill('0') << step++ << "_" << name;
    WriteFile(fs::path(opt.dump_dir) / (prefix.str() + ".txt"), g.ToText());
    WriteFile(fs::path(opt.dump_dir) / (prefix.str() + ".dot"), g.ToDot());
  };
  auto report = [&](const std::string& name, double ms, const Graph& g) {
    if (log) {
      *log << "emberc: " << std::left << std::setw(16) << name << std::right << std::fixed
           << std::setprecision(2) << std::setw(9) << ms << " ms  (" << g.nodes().size()
           << " nodes)\n";
    }
  };

  const schedule::TableStrategy strategy(
      target, opt.strategy ? *opt.strategy : StrategyOptionsFromEnvironment());
  ImportOptions io;
  io.input_shapes = opt.input_shapes;
  io.bindings = opt.bindings;
  io.log = log;
  io.strategy = &strategy;
  auto t0 = Clock::now();
  Graph graph = ImportOnnxFile(opt.model_path, io);
  report("import", MsSince(t0), graph);
  dump("import", graph);

  const ControlFlowScheduler scheduler(&strategy, &strategy, opt.opt_level);
  for (const Pass& p : GraphPasses(strategy)) {
    t0 = Clock::now();
    p.run(&graph);
    report(p.name, MsSince(t0), graph);
    dump(p.name, graph);
  }
  t0 = Clock::now();
  std::vector<FusedGroup> groups = FuseOps(&graph, opt.opt_level);
  report("fuse_ops", MsSince(t0), graph);
  if (!opt.dump_dir.empty()) {
    dump("fuse_ops", graph);
    WriteFile(fs::path(opt.dump_dir) / "groups.txt", GroupsText(graph, groups));
  }

  t0 = Clock::now();
  GraphArtifact art = BuildGraphArtifact(graph, groups);
  report("plan_memory", MsSince(t0), graph);

  CompileStats st;
  if (opt.tune) {
    autotune::TuneOptions to;
    to.max_candidates = opt.tune_candidates;
    to.repeat = opt.tune_repeat;
    to.version = EMBER_VERSION;
    to.log = opt.log;
    to.scheduler = &scheduler;
    to.linker = LinkerFromEnvironment();
    // The host, or each board in turn; a board whose CPU an earlier one had reuses its records.
    for (size_t b = 0; b < std::max<size_t>(boards.size(), 1); ++b) {
      std::unique_ptr<autotune::RemoteKernelTimer> other;
      std::string cpu = board_cpu;
      if (b > 0) {
        other = std::make_unique<autotune::RemoteKernelTimer>(boards[b]);
        cpu = other->BoardCpu();
        if (opt.log) *opt.log << "emberc: board " << boards[b].board << ": CPU " << cpu << "\n";
      }
      schedule::ScopedTuningBoard this_board(cpu);
      to.remote = b > 0 ? other.get() : board.get();
      autotune::TuneReport tr = autotune::TuneGroups(groups, target, to, tuning.get());
      tuning->Save(tuning_path);
      st.tuned_workloads += tr.measured;
      st.tune_seconds += tr.seconds;
      if (opt.log) {
        *opt.log << "emberc: tuned " << tr.measured << " of " << tr.workloads
                 << " tunable workloads (" << tr.reused << " already in the log, " << tr.candidates
                 << " candidates timed, " << tr.rejected << " rejected) in " << std::fixed
                 << std::setprecision(1) << tr.seconds << " s"
                 << (boards.empty() ? "" : " on " + boards[b].board) << "; winners in "
                 << tuning_path << "\n";
      }
    }
  }

  fs::create_directories(opt.out_dir);
  t0 = Clock::now();
  BuildOptions bo;
  bo.tuning_log = tuning.get();
  bo.system_lib = opt.system_lib;
  bo.opt_level = opt.opt_level;
  bo.dump_dir = opt.dump_dir;
  bo.verbose = opt.verbose;
  bo.jobs = opt.jobs;
  bo.scheduler = &scheduler;
  bo.linker = LinkerFromEnvironment();
  bo.exact_float_groups = GroupsBeforeARounding(graph, groups);
  BuildKernelLibrary(groups, target,
                     (fs::path(opt.out_dir) / LibraryFileName(opt.system_lib)).string(), bo);
  report("codegen", MsSince(t0), graph);
  if (tuning) {
    st.tuning_log_used = static_cast<int>(tuning->used().size());
    if (log) {
      *log << "emberc: tuning log " << tuning_path << ": " << tuning->size() << " records, "
           << st.tuning_log_used << " used\n";
      for (const std::string& key : tuning->used()) {
        *log << "emberc:   " << key << " -> "
             << autotune::ParamSetToString(tuning->Find(key)->params) << "\n";
      }
    }
  }

  t0 = Clock::now();
  WriteFile(fs::path(opt.out_dir) / "graph.json", art.graph_json);
  WriteParamsFile((fs::path(opt.out_dir) / "params.bin").string(), art.params);
  report("write_artifact", MsSince(t0), graph);

  st.num_nodes = static_cast<int>(graph.nodes().size());
  st.num_kernels = static_cast<int>(groups.size());
  st.activation_bytes = art.plan.activation_bytes;
  st.activation_bytes_no_reuse = art.plan.activation_bytes_no_reuse;
  for (const auto& p : art.params) st.params_bytes += p.second->type.ByteSize();
  st.total_ms = MsSince(t_start);
  if (log) {
    *log << "emberc: " << st.num_nodes << " nodes in " << st.num_kernels << " kernels; "
         << "planned activation memory " << st.activation_bytes
         << " bytes (no reuse: " << st.activation_bytes_no_reuse << " bytes); params "
         << st.params_bytes << " bytes; total " << std::fixed << std::setprecision(1) << st.total_ms
         << " ms\n";
  }
  return st;
}

}  // namespace compiler
}  // namespace ember
