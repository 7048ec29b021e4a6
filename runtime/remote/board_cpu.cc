// The CPU name of a board's /proc/cpuinfo (see board_cpu.h).
#include "board_cpu.h"

#include <map>
#include <sstream>
#include <utility>
#include <vector>

namespace ember::remote {

namespace {

std::string Clean(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = c == ' ' || c == '\t';
    if (static_cast<unsigned char>(c) < 0x20 && !space) continue;
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The first value of every "key : value" line (later processors repeat the first's on boards
// with one kind of core; big.LITTLE boards are named by their first core).
std::map<std::string, std::string> FirstValues(const std::string& cpuinfo) {
  std::map<std::string, std::string> values;
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Clean(line.substr(0, colon));
    std::string value = Clean(line.substr(colon + 1));
    if (!key.empty() && !value.empty()) values.emplace(key, value);
  }
  return values;
}

}  // namespace

std::string BoardCpuName(const std::string& cpuinfo) {
  std::map<std::string, std::string> v = FirstValues(cpuinfo);
  const std::vector<std::pair<const char*, const char*>> arm_fields = {
      {"CPU implementer", "impl="},
      {"CPU architecture", "arch="},
      {"CPU variant", "var="},
      {"CPU part", "part="},
      {"CPU revision", "rev="}};
  std::string name = v.count("model name") ? v["model name"] : "";
  for (const auto& [key, label] : arm_fields) {
    if (v.count(key) == 0) continue;
    name += (name.empty() ? "" : " ") + std::string(label) + v[key];
  }
  return name;
}

}  // namespace ember::remote
