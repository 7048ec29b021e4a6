// Fleet hosts files (see hosts_file.h).
#include "hosts_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ember::remote {

namespace {

std::vector<int> ParseThreads(const std::string& text, const std::string& where) {
  std::vector<int> counts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool digits = !item.empty() && item.size() <= 4 &&
                  item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(item) < 1) {
      throw std::runtime_error(
          where + ": THREADS must be a comma list of positive integers, got \"" + text + "\"");
    }
    counts.push_back(std::stoi(item));
  }
  return counts;
}

}  // namespace

std::vector<FleetBoard> ParseHostsFile(const std::string& text, const std::string& path) {
  std::vector<FleetBoard> boards;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    std::string where = path + ":" + std::to_string(number);
    if (w.size() < 4) {
      throw std::runtime_error(where +
                               ": expected NAME DESTINATION TARGET THREADS "
                               "[EXEC-WRAPPER...], got \"" +
                               line + "\"");
    }
    FleetBoard b{w[0], w[1], w[2], ParseThreads(w[3], where), ""};
    for (size_t i = 4; i < w.size(); ++i) b.exec_wrapper += (i > 4 ? " " : "") + w[i];
    for (const FleetBoard& other : boards) {
      if (other.name == b.name)
        throw std::runtime_error(where + ": board name \"" + b.name + "\" is used twice");
    }
    boards.push_back(b);
  }
  if (boards.empty()) throw std::runtime_error(path + ": no boards listed");
  return boards;
}

std::vector<FleetBoard> LoadHostsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the hosts file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseHostsFile(text.str(), path);
}

}  // namespace ember::remote
