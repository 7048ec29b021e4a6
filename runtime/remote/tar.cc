// ustar writing and reading (see tar.h).
#include "tar.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ember::remote {

namespace {

constexpr size_t kBlock = 512;
constexpr size_t kNameLen = 100;
constexpr size_t kModeAt = 100, kUidAt = 108, kGidAt = 116, kSizeAt = 124, kMtimeAt = 136;
constexpr size_t kChksumAt = 148, kChksumLen = 8, kTypeAt = 156, kMagicAt = 257;
constexpr size_t kPrefixAt = 345, kPrefixLen = 155;
constexpr char kRegular = '0', kDirectory = '5';

using Block = std::array<char, kBlock>;

void Octal(Block* h, size_t at, size_t width, unsigned long long v) {
  std::snprintf(h->data() + at, width, "%0*llo", static_cast<int>(width - 1), v);
}

unsigned Checksum(const Block& h) {
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    bool in_field = i >= kChksumAt && i < kChksumAt + kChksumLen;
    sum += in_field ? ' ' : static_cast<unsigned char>(h[i]);
  }
  return sum;
}

Block Header(const std::string& name, size_t size, bool executable) {
  if (name.empty() || name.size() > kNameLen) {
    throw std::runtime_error("tar: member name \"" + name + "\" must have 1 to 100 bytes");
  }
  Block h{};
  std::memcpy(h.data(), name.data(), name.size());
  Octal(&h, kModeAt, 8, executable ? 0755 : 0644);
  Octal(&h, kUidAt, 8, 0);
  Octal(&h, kGidAt, 8, 0);
  Octal(&h, kSizeAt, 12, size);
  Octal(&h, kMtimeAt, 12, 0);
  h[kTypeAt] = kRegular;
  std::memcpy(h.data() + kMagicAt,
              "ustar\0"
              "00",
              8);
  std::snprintf(h.data() + kChksumAt, kChksumLen, "%06o", Checksum(h));
  h[kChksumAt + 7] = ' ';
  return h;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Field(const Block& h, size_t at, size_t len) {
  std::string s(h.data() + at, len);
  return s.substr(0, s.find('\0'));
}

}  // namespace

void WriteTar(const std::vector<TarMember>& members, const std::string& tar_path) {
  std::ofstream out(tar_path, std::ios::binary);
  const Block zero{};
  for (const TarMember& m : members) {
    std::string data = ReadFile(m.local_path);
    out.write(Header(m.name, data.size(), m.executable).data(), kBlock);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.write(zero.data(), static_cast<std::streamsize>((kBlock - data.size() % kBlock) % kBlock));
  }
  out.write(zero.data(), kBlock);
  out.write(zero.data(), kBlock);
  if (!out.flush()) throw std::runtime_error("cannot write " + tar_path);
}

std::map<std::string, std::string> ReadFlatTar(const std::string& tar_path,
                                               const std::string& what) {
  std::string bytes = ReadFile(tar_path);
  std::map<std::string, std::string> files;
  auto bad = [&](const std::string& why) {
    return std::runtime_error(what + ": malformed tar archive (" + why + ")");
  };
  for (size_t at = 0; at + kBlock <= bytes.size();) {
    Block h;
    std::memcpy(h.data(), bytes.data() + at, kBlock);
    at += kBlock;
    if (h[0] == '\0') break;  // the end blocks
    if (std::strtoul(Field(h, kChksumAt, kChksumLen).c_str(), nullptr, 8) != Checksum(h)) {
      throw bad("header checksum");
    }
    std::string name = Field(h, 0, kNameLen);
    std::string prefix = Field(h, kPrefixAt, kPrefixLen);
    if (!prefix.empty()) name = prefix + "/" + name;
    while (name.rfind("./", 0) == 0) name = name.substr(2);
    size_t size = std::strtoull(Field(h, kSizeAt, 12).c_str(), nullptr, 8);
    if (size > bytes.size() - at) throw bad("member " + name + " runs past the end");
    char type = h[kTypeAt];
    if (type == kDirectory && (name.empty() || name == ".")) {
      // the archived directory itself
    } else if (type != kRegular && type != '\0') {
      throw bad("member " + name + " is not a regular file");
    } else if (name.empty() || name.find('/') != std::string::npos || name == "..") {
      throw bad("member name \"" + name + "\" leaves the directory");
    } else {
      files[name] = bytes.substr(at, size);
    }
    at += (size + kBlock - 1) / kBlock * kBlock;
  }
  return files;
}

}  // namespace ember::remote
