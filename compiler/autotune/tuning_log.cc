// Reading, merging and writing the tuning log (format in tuning_log.h).
#include "tuning_log.h"

#include <ember/compiler/ir/tensor_type.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember::compiler::autotune {
namespace {

constexpr const char* kHeader = "# ember tuning log v1: KEY<TAB>PARAMS<TAB>TIME_MS<TAB>VERSION";
constexpr int kFields = 4;

bool ValidParamName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool ValidText(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool ParseInt64(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

}  // namespace

std::string ParamSetToString(const ParamSet& p) {
  std::string s;
  for (const auto& kv : p) {
    if (!s.empty()) s += ",";
    s += kv.first + "=" + std::to_string(kv.second);
  }
  return s;
}

TuningLog TuningLog::Parse(const std::string& text, const std::string& name) {
  TuningLog log;
  log.path_ = name;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto fail = [&](const std::string& what) {
      throw CompileError("tuning log " + name + " line " + std::to_string(line_no) + ": " + what +
                         " (line format: KEY<TAB>PARAMS<TAB>TIME_MS<TAB>VERSION, PARAMS like "
                         "\"lanes=32,oc_block=4\")");
    };
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
      size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields.size() != kFields) {
      fail("expected " + std::to_string(kFields) + " tab-separated fields, got " +
           std::to_string(fields.size()));
    }
    TuningRecord r;
    r.key = fields[0];
    if (!ValidText(r.key)) fail("empty key or control characters in the key");
    std::stringstream ps(fields[1]);
    std::string item;
    while (std::getline(ps, item, ',')) {
      size_t eq = item.find('=');
      int64_t v = 0;
      if (eq == std::string::npos || !ValidParamName(item.substr(0, eq)) ||
          !ParseInt64(item.substr(eq + 1), &v)) {
        fail("bad parameter \"" + item + "\", expected name=integer with a name of [a-z0-9_]");
      }
      if (!r.params.emplace(item.substr(0, eq), v).second) {
        fail("parameter \"" + item.substr(0, eq) + "\" given twice");
      }
    }
    if (r.params.empty()) fail("no parameters");
    char* end = nullptr;
    r.time_ms = std::strtod(fields[2].c_str(), &end);
    if (fields[2].empty() || end != fields[2].c_str() + fields[2].size() ||
        !std::isfinite(r.time_ms) || r.time_ms < 0) {
      fail("time \"" + fields[2] + "\" is not a non-negative number of milliseconds");
    }
    r.version = fields[3];
    if (!ValidText(r.version)) fail("empty version or control characters in the version");
    log.Put(std::move(r));
  }
  return log;
}

TuningLog TuningLog::Load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw CompileError("cannot read tuning log " + path + " (run emberc with --tune to make one)");
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw CompileError("cannot read tuning log " + path);
  return Parse(ss.str(), path);
}

TuningLog TuningLog::LoadIfExists(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return Load(path);
  TuningLog log;
  log.path_ = path;
  return log;
}

const TuningRecord* TuningLog::Find(const std::string& key) const {
  auto it = records_.find(key);
  return it == records_.end() ? nullptr : &it->second;
}

void TuningLog::Put(TuningRecord r) {
  std::string key = r.key;
  records_[key] = std::move(r);
}

void TuningLog::Merge(const TuningLog& other) {
  for (const auto& kv : other.records_) Put(kv.second);
}

std::string TuningLog::ToText() const {
  std::ostringstream os;
  os << kHeader << "\n";
  for (const auto& kv : records_) {
    const TuningRecord& r = kv.second;
    char time[32];
    std::snprintf(time, sizeof(time), "%.4f", r.time_ms);
    os << r.key << "\t" << ParamSetToString(r.params) << "\t" << time << "\t" << r.version << "\n";
  }
  return os.str();
}

void TuningLog::Save(const std::string& path) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << ToText();
    f.close();
    if (!f) {
      fs::remove(tmp, ec);
      throw CompileError("cannot write tuning log " + path + " (through " + tmp + ")");
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw CompileError("cannot write tuning log " + path + ": " + ec.message());
  }
}

}  // namespace ember::compiler::autotune
