// NumPy .npy reader and writer; the format is described in include/ember/runtime/npy.h.
#include <ember/runtime/npy.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>

namespace ember {
namespace runtime {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;
// magic + major + minor + uint16 header length (version 1).
constexpr size_t kNpyPrefixV1 = kNpyMagicLen + 2 + 2;
// magic + major + minor + uint32 header length (versions 2 and 3).
constexpr size_t kNpyPrefixV2 = kNpyMagicLen + 2 + 4;
// numpy pads the prefix plus the header to a multiple of this.
constexpr size_t kNpyHeaderAlign = 64;
// numpy itself allows 32 (1.x) or 64 (2.x) dimensions.
constexpr size_t kNpyMaxDims = 64;
// A header larger than this is not something numpy writes; refuse before reading it.
constexpr uint64_t kNpyMaxHeaderLen = 1 << 20;

[[noreturn]] void Fail(const std::string& source, const std::string& what) {
  throw NpyError(source + ": " + what);
}

uint64_t ItemSize(DLDataType t) { return (static_cast<uint64_t>(t.bits) * t.lanes + 7) / 8; }

// A cursor over the header's Python dict literal. Only the subset numpy writes is accepted:
// strings, True/False, and tuples of non-negative integers.
class DictParser {
 public:
  DictParser(const std::string& text, const std::string& source) : s_(text), src_(source) {}

  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool Accept(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  void Expect(char c, const char* where) {
    if (!Accept(c)) Error(std::string("expected '") + c + "' " + where);
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= s_.size();
  }

  std::string ReadString() {
    SkipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) Error("expected a string");
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') Error("escape sequences are not supported in header strings");
      out += s_[pos_++];
    }
    if (pos_ >= s_.size()) Error("unterminated string");
    ++pos_;
    return out;
  }

  bool ReadBool() {
    SkipSpace();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    Error("expected True or False");
  }

  std::vector<int64_t> ReadShape() {
    Expect('(', "to open 'shape'");
    std::vector<int64_t> shape;
    while (!Accept(')')) {
      if (!shape.empty()) Expect(',', "between shape dimensions");
      if (Accept(')')) break;  // trailing comma, as in (3,)
      if (shape.size() >= kNpyMaxDims) {
        Error("more than " + std::to_string(kNpyMaxDims) + " dimensions");
      }
      shape.push_back(ReadDim());
    }
    return shape;
  }

  char Current() {
    SkipSpace();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }

  [[noreturn]] void Error(const std::string& what) {
    Fail(src_, "malformed .npy header (" + what + " at offset " + std::to_string(pos_) +
                   " of the header dict): " + Excerpt());
  }

 private:
  int64_t ReadDim() {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') {
      Error("expected a non-negative integer dimension");
    }
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        Error("dimension too large");
      }
      ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literal
    return static_cast<int64_t>(v);
  }

  std::string Excerpt() const {
    constexpr size_t kMax = 80;
    std::string out;
    for (size_t i = 0; i < s_.size() && out.size() < kMax; ++i) {
      char c = s_[i];
      out += (c >= 32 && c < 127) ? c : '?';
    }
    if (s_.size() > kMax) out += "...";
    return out;
  }

  const std::string& s_;
  const std::string& src_;
  size_t pos_ = 0;
};

DLDataType DTypeFromDescr(const std::string& descr, const std::string& source) {
  auto refuse = [&](const std::string& why) -> DLDataType {
    Fail(source, "unsupported dtype '" + descr + "': " + why);
  };
  if (descr.size() < 3) return refuse("expected a byte order, a kind and a size such as '<f4'");
  char order = descr[0];
  char kind = descr[1];
  std::string size_text = descr.substr(2);
  for (char c : size_text) {
    if (c < '0' || c > '9') return refuse("expected a byte order, a kind and a size such as '<f4'");
  }
  if (size_text.size() > 2) return refuse("item size too large");
  int size = std::stoi(size_text);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return refuse("byte order must be '<', '|', '=' or '>'");
  }
  if (order == '>' && size > 1) {
    return refuse("big-endian data is not supported; save it little-endian, e.g. arr.astype('<" +
                  std::string(1, kind) + size_text + "')");
  }
  DLDataType t{kDLFloat, 0, 1};
  switch (kind) {
    case 'b':
      if (size != 1) return refuse("bool must have item size 1");
      t.code = kDLUInt;
      t.bits = 1;
      return t;
    case 'i':
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) return refuse("bad integer size");
      t.code = kind == 'i' ? kDLInt : kDLUInt;
      t.bits = static_cast<uint8_t>(size * 8);
      return t;
    case 'f':
      if (size != 2 && size != 4 && size != 8) return refuse("float must be f2, f4 or f8");
      t.code = kDLFloat;
      t.bits = static_cast<uint8_t>(size * 8);
      return t;
    case 'c':
      if (size != 8 && size != 16) return refuse("complex must be c8 or c16");
      t.code = kDLComplex;
      t.bits = static_cast<uint8_t>(size * 8);
      return t;
    default:
      return refuse("only bool, integer, float and complex arrays are supported");
  }
}

uint64_t DataBytes(DLDataType dtype, const std::vector<int64_t>& shape, const std::string& source) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) Fail(source, "negative dimension in shape");
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && count > std::numeric_limits<uint64_t>::max() / ud) {
      Fail(source, "shape has more elements than fit in 64 bits");
    }
    count *= ud;
  }
  uint64_t item = ItemSize(dtype);
  if (item != 0 && count > std::numeric_limits<uint64_t>::max() / item) {
    Fail(source, "shape times item size overflows 64 bits");
  }
  return count * item;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) os << ", ";
    os << shape[i];
  }
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

void ReadExactly(FILE* f, void* out, size_t n, const std::string& path, const char* what) {
  if (n != 0 && std::fread(out, 1, n, f) != n) {
    Fail(path, std::string("read error or unexpected end of file while reading the ") + what);
  }
}

}  // namespace

NpyHeader ParseNpyHeader(const uint8_t* bytes, size_t size, const std::string& source) {
  if (size < kNpyPrefixV1 || std::memcmp(bytes, kNpyMagic, kNpyMagicLen) != 0) {
    Fail(source, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  int major = bytes[6];
  uint64_t header_len = 0;
  size_t prefix = 0;
  if (major == 1) {
    header_len = static_cast<uint64_t>(bytes[8]) | static_cast<uint64_t>(bytes[9]) << 8;
    prefix = kNpyPrefixV1;
  } else if (major == 2 || major == 3) {
    if (size < kNpyPrefixV2) Fail(source, "truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<uint64_t>(bytes[8 + i]) << (8 * i);
    prefix = kNpyPrefixV2;
  } else {
    Fail(source, "unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(bytes[7]) + " (expected 1.0, 2.0 or 3.0)");
  }
  if (header_len > kNpyMaxHeaderLen) {
    Fail(source, "malformed .npy header (header length " + std::to_string(header_len) +
                     " is larger than any numpy writes)");
  }
  if (size - prefix < header_len) {
    Fail(source, "truncated .npy header (expected " + std::to_string(header_len) +
                     " header bytes, the file has " + std::to_string(size - prefix) + ")");
  }
  std::string text(reinterpret_cast<const char*>(bytes + prefix), header_len);

  DictParser p(text, source);
  std::string descr;
  bool have_descr = false, have_order = false, have_shape = false;
  bool fortran = false;
  std::vector<int64_t> shape;
  p.Expect('{', "at the start of the header");
  while (!p.Accept('}')) {
    if (have_descr || have_order || have_shape) {
      p.Expect(',', "between header entries");
      if (p.Accept('}')) break;
    }
    std::string key = p.ReadString();
    p.Expect(':', "after a header key");
    if (key == "descr") {
      if (p.Current() == '[') {
        Fail(source, "structured (record) dtypes are not supported; save a plain numeric array");
      }
      descr = p.ReadString();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.ReadBool();
      have_order = true;
    } else if (key == "shape") {
      shape = p.ReadShape();
      have_shape = true;
    } else {
      p.Error("unexpected key '" + key + "'");
    }
  }
  if (!p.AtEnd()) p.Error("unexpected text after the header dict");
  if (!have_descr) Fail(source, "malformed .npy header (no 'descr' entry)");
  if (!have_order) Fail(source, "malformed .npy header (no 'fortran_order' entry)");
  if (!have_shape) Fail(source, "malformed .npy header (no 'shape' entry)");

  NpyHeader h;
  h.dtype = DTypeFromDescr(descr, source);
  if (fortran && shape.size() > 1) {
    Fail(source,
         "Fortran-order arrays are not supported; save a C-order copy "
         "(numpy.ascontiguousarray(arr))");
  }
  h.shape = std::move(shape);
  h.data_offset = prefix + header_len;
  h.data_bytes = DataBytes(h.dtype, h.shape, source);
  return h;
}

void CheckNpyDataSize(const NpyHeader& header, uint64_t file_size, const std::string& source) {
  uint64_t have = file_size >= header.data_offset ? file_size - header.data_offset : 0;
  if (have != header.data_bytes) {
    Fail(source, "data size mismatch: shape " + ShapeText(header.shape) + " of " +
                     NpyDescr(header.dtype) + " needs " + std::to_string(header.data_bytes) +
                     " bytes, the file holds " + std::to_string(have) + " after the header");
  }
}

NpyArray ParseNpy(const uint8_t* bytes, size_t size, const std::string& source) {
  NpyHeader h = ParseNpyHeader(bytes, size, source);
  CheckNpyDataSize(h, size, source);
  NpyArray out;
  out.dtype = h.dtype;
  out.shape = std::move(h.shape);
  out.data.assign(bytes + h.data_offset, bytes + h.data_offset + h.data_bytes);
  return out;
}

namespace {
// Opens \p path and validates its header and size, leaving the file at the array data.
NpyHeader OpenNpy(const std::string& path, FilePtr* file) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    Fail(path, std::string("cannot open .npy file: ") + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) Fail(path, "not a regular file");
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) Fail(path, std::string("cannot open .npy file: ") + std::strerror(errno));
  uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // Read the fixed prefix, then exactly the announced header, then validate before allocating.
  std::vector<uint8_t> head(kNpyPrefixV2, 0);
  size_t got = std::fread(head.data(), 1, head.size(), f.get());
  if (got < kNpyPrefixV1)
    Fail(path, "not a .npy file (too short to hold the \\x93NUMPY magic and header length)");
  head.resize(got);
  // The first parse only learns the header length: it is expected to fail as truncated, unless
  // the whole header already fits.
  uint64_t header_len = 0;
  size_t prefix = kNpyPrefixV1;
  if (std::memcmp(head.data(), kNpyMagic, kNpyMagicLen) != 0) {
    Fail(path, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  if (head[6] == 1) {
    header_len = static_cast<uint64_t>(head[8]) | static_cast<uint64_t>(head[9]) << 8;
  } else if ((head[6] == 2 || head[6] == 3) && head.size() >= kNpyPrefixV2) {
    prefix = kNpyPrefixV2;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<uint64_t>(head[8 + i]) << (8 * i);
  }
  if (header_len <= kNpyMaxHeaderLen && prefix + header_len <= file_size) {
    size_t want = prefix + static_cast<size_t>(header_len);
    size_t had = head.size();
    if (want > had) {
      head.resize(want);
      ReadExactly(f.get(), head.data() + had, want - had, path, "header");
    }
  }
  NpyHeader h = ParseNpyHeader(head.data(), head.size(), path);
  CheckNpyDataSize(h, file_size, path);
  if (std::fseek(f.get(), static_cast<long>(h.data_offset), SEEK_SET) != 0) {
    Fail(path, "cannot seek to the array data");
  }
  *file = std::move(f);
  return h;
}
}  // namespace

NpyHeader ReadNpyHeader(const std::string& path) {
  FilePtr f;
  return OpenNpy(path, &f);
}

namespace detail {
void LoadNpyWith(const std::string& path, void* (*alloc)(void* ctx, const NpyHeader& header),
                 void* ctx) {
  FilePtr f;
  NpyHeader h = OpenNpy(path, &f);
  void* dst = alloc(ctx, h);
  ReadExactly(f.get(), dst, static_cast<size_t>(h.data_bytes), path, "array data");
}
}  // namespace detail

NpyArray LoadNpy(const std::string& path) {
  NpyArray out;
  LoadNpyInto(path, [&](const NpyHeader& h) -> void* {
    out.dtype = h.dtype;
    out.shape = h.shape;
    out.data.resize(static_cast<size_t>(h.data_bytes));
    return out.data.data();
  });
  return out;
}

std::string NpyDescr(DLDataType dtype) {
  std::string bad = "dtype code " + std::to_string(dtype.code) + " bits " +
                    std::to_string(dtype.bits) + " lanes " + std::to_string(dtype.lanes);
  if (dtype.lanes != 1) throw NpyError("no numpy dtype for vector type (" + bad + ")");
  switch (dtype.code) {
    case kDLUInt:
      if (dtype.bits == 1) return "|b1";
      if (dtype.bits == 8) return "|u1";
      if (dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64) {
        return "<u" + std::to_string(dtype.bits / 8);
      }
      break;
    case kDLInt:
      if (dtype.bits == 8) return "|i1";
      if (dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64) {
        return "<i" + std::to_string(dtype.bits / 8);
      }
      break;
    case kDLFloat:
      if (dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64) {
        return "<f" + std::to_string(dtype.bits / 8);
      }
      break;
    case kDLComplex:
      if (dtype.bits == 64 || dtype.bits == 128) return "<c" + std::to_string(dtype.bits / 8);
      break;
    default:
      break;
  }
  throw NpyError("no numpy dtype for " + bad);
}

std::string SerializeNpyHeader(DLDataType dtype, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + NpyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': " + ShapeText(shape) + ", }";
  // Version 1.0 when the padded dict fits a uint16 length, else 2.0.
  size_t prefix = kNpyPrefixV1;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + kNpyHeaderAlign - 1) / kNpyHeaderAlign * kNpyHeaderAlign;
  if (padded - prefix > std::numeric_limits<uint16_t>::max()) {
    prefix = kNpyPrefixV2;
    total = prefix + dict.size() + 1;
    padded = (total + kNpyHeaderAlign - 1) / kNpyHeaderAlign * kNpyHeaderAlign;
  }
  uint64_t header_len = padded - prefix;
  std::string out(kNpyMagic, kNpyMagicLen);
  out += static_cast<char>(prefix == kNpyPrefixV1 ? 1 : 2);
  out += static_cast<char>(0);
  for (size_t i = 0; i < prefix - kNpyMagicLen - 2; ++i) {
    out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  }
  out += dict;
  out.append(padded - total, ' ');
  out += '\n';
  return out;
}

void SaveNpy(const std::string& path, DLDataType dtype, const std::vector<int64_t>& shape,
             const void* data, size_t nbytes) {
  std::string header;
  try {
    header = SerializeNpyHeader(dtype, shape);
  } catch (const NpyError& e) {
    Fail(path, e.what());
  }
  uint64_t want = DataBytes(dtype, shape, path);
  if (want != nbytes) {
    Fail(path, "SaveNpy: shape " + ShapeText(shape) + " needs " + std::to_string(want) +
                   " bytes, got " + std::to_string(nbytes));
  }
  FilePtr f(std::fopen(path.c_str(), "wb"));
  if (!f) Fail(path, std::string("cannot create .npy file: ") + std::strerror(errno));
  if (std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      (nbytes != 0 && std::fwrite(data, 1, nbytes, f.get()) != nbytes)) {
    Fail(path, std::string("write error: ") + std::strerror(errno));
  }
  if (std::fclose(f.release()) != 0) {
    Fail(path, std::string("write error on close: ") + std::strerror(errno));
  }
}

}  // namespace runtime
}  // namespace ember
