// Boards of --remote and --fleet (see tuning_boards.h).
#include "driver/tuning_boards.h"

#include "runtime/remote/hosts_file.h"

namespace ember::compiler {

namespace {

// The architecture family of a triple: what one ember-run and one kernel library serve.
std::string ArchOf(const std::string& triple) {
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch.rfind("arm", 0) == 0 || arch.rfind("thumb", 0) == 0) return "arm";
  if (arch == "amd64") return "x86_64";
  return arch;
}

}  // namespace

std::vector<RemoteBoardOptions> TuningBoards(const CompileOptions& opt, const Target& target) {
  if (opt.fleet_file.empty()) {
    if (opt.remote.board.empty()) return {};
    return {opt.remote};
  }
  if (!opt.remote.board.empty()) {
    throw CompileError("--remote " + opt.remote.board + " and --fleet " + opt.fleet_file +
                       " both name boards; give one of them");
  }
  std::vector<remote::FleetBoard> fleet;
  try {
    fleet = remote::LoadHostsFile(opt.fleet_file);
  } catch (const std::exception& e) {
    throw CompileError(std::string("--fleet: ") + e.what());
  }
  std::vector<RemoteBoardOptions> boards;
  std::string triples;
  for (const remote::FleetBoard& b : fleet) {
    triples += (triples.empty() ? "" : ", ") + b.name + " " + b.triple;
    if (ArchOf(b.triple) != ArchOf(target.triple)) continue;
    RemoteBoardOptions o = opt.remote;  // --remote-dir, --runtime-dir and ssh options hold for all
    o.board = b.destination;
    if (!b.exec_wrapper.empty()) o.exec_wrapper = b.exec_wrapper;
    boards.push_back(o);
  }
  if (boards.empty()) {
    throw CompileError("--fleet " + opt.fleet_file + ": no board has the target's architecture (" +
                       target.triple + "); the boards are: " + triples);
  }
  return boards;
}

}  // namespace ember::compiler
