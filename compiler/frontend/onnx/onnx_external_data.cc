// External data read from inside the model's directory only (see onnx_external_data.h).
#include "frontend/onnx/onnx_external_data.h"

#include <ember/compiler/ir/tensor_type.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"

namespace ember {
namespace compiler {
namespace {

// As many symlinks as Linux follows in one path (MAXSYMLINKS).
constexpr int kMaxSymlinks = 40;

using TensorVisitor = std::function<void(onnx::TensorProto*)>;

void VisitGraph(onnx::GraphProto* g, const TensorVisitor& visit);

void VisitSparse(onnx::SparseTensorProto* s, const TensorVisitor& visit) {
  if (s->has_values()) visit(s->mutable_values());
  if (s->has_indices()) visit(s->mutable_indices());
}

// Every tensor of a graph: initializers, sparse initializers and node attributes, recursively.
void VisitGraph(onnx::GraphProto* g, const TensorVisitor& visit) {
  for (auto& t : *g->mutable_initializer()) visit(&t);
  for (auto& s : *g->mutable_sparse_initializer()) VisitSparse(&s, visit);
  for (auto& node : *g->mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) visit(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) visit(&t);
      if (a.has_sparse_tensor()) VisitSparse(a.mutable_sparse_tensor(), visit);
      for (auto& s : *a.mutable_sparse_tensors()) VisitSparse(&s, visit);
      if (a.has_g()) VisitGraph(a.mutable_g(), visit);
      for (auto& sub : *a.mutable_graphs()) VisitGraph(&sub, visit);
    }
  }
}

// Splits on '/', dropping empty components ("a//b" is "a/b").
std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

std::string JoinUnder(const std::string& root, const std::vector<std::string>& parts) {
  std::string out = root;
  for (const std::string& p : parts) out += (out == "/" ? "" : "/") + p;
  return out;
}

// One tensor's external data, as its entries describe it.
struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  bool has_length = false;
  uint64_t length = 0;
};

class ExternalDataReader {
 public:
  ExternalDataReader(const std::string& model_dir, const std::string& source)
      : dir_(model_dir.empty() ? "." : model_dir), source_(source) {
    char* real = ::realpath(dir_.c_str(), nullptr);
    if (real == nullptr) {
      throw CompileError(source_ + ": cannot resolve the model's directory " + dir_ + ": " +
                         std::strerror(errno));
    }
    root_ = real;
    std::free(real);
  }

  void Load(onnx::TensorProto* t) {
    if (t->data_location() != onnx::TensorProto::EXTERNAL) return;
    ExternalRef ref = ParseRef(*t);
    std::string path = Resolve(*t, ref.location);
    std::string bytes = ReadRange(*t, ref, path);
    t->clear_external_data();
    t->set_data_location(onnx::TensorProto::DEFAULT);
    t->set_raw_data(std::move(bytes));
  }

 private:
  std::string Where(const onnx::TensorProto& t) const {
    return source_ + ": tensor '" + t.name() + "'";
  }

  // What a refusal says after the reason: where emberc looks, and nowhere else.
  std::string Inside() const {
    return "; emberc reads external data only from files inside the model's directory (" + root_ +
           ")";
  }

  static uint64_t ParseNumber(const std::string& text, const std::string& what) {
    bool digits = !text.empty() && text.size() <= 20 &&
                  text.find_first_not_of("0123456789") == std::string::npos;
    errno = 0;
    unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno == ERANGE) {
      throw CompileError(what + " is '" + text + "', expected a non-negative integer");
    }
    return static_cast<uint64_t>(v);
  }

  ExternalRef ParseRef(const onnx::TensorProto& t) const {
    ExternalRef ref;
    bool has_location = false;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        ref.location = kv.value();
        has_location = true;
      } else if (kv.key() == "offset") {
        ref.offset = ParseNumber(kv.value(), Where(t) + ": external data offset");
      } else if (kv.key() == "length") {
        ref.length = ParseNumber(kv.value(), Where(t) + ": external data length");
        ref.has_length = true;
      }  // "checksum" and unknown keys are informational
    }
    if (!has_location || ref.location.empty()) {
      throw CompileError(Where(t) + " keeps its data in an external file but gives no location");
    }
    if (ref.location.find('\0') != std::string::npos) {
      throw CompileError(Where(t) + ": external data location contains a NUL byte");
    }
    if (ref.location[0] == '/') {
      throw CompileError(Where(t) + ": external data location '" + ref.location +
                         "' is an absolute path" + Inside());
    }
    for (const std::string& part : SplitPath(ref.location)) {
      if (part == "..") {
        throw CompileError(Where(t) + ": external data location '" + ref.location +
                           "' contains '..'" + Inside());
      }
    }
    return ref;
  }

  // The location resolved under root_, following symlinks one component at a time; a symlink
  // leaving root_ is refused from its text alone, before anything outside is looked at.
  std::string Resolve(const onnx::TensorProto& t, const std::string& location) const {
    std::deque<std::string> todo;
    for (auto& p : SplitPath(location)) todo.push_back(std::move(p));
    std::vector<std::string> done;  // real (symlink-free) components below root_
    int links = 0;
    auto escape = [&] {
      return CompileError(Where(t) + ": external data location '" + location +
                          "' resolves through a symlink to outside the model's directory" +
                          Inside());
    };
    while (!todo.empty()) {
      std::string part = std::move(todo.front());
      todo.pop_front();
      if (part == ".") continue;
      if (part == "..") {  // only from a symlink's target: the location itself has none
        if (done.empty()) throw escape();
        done.pop_back();
        continue;
      }
      std::string path = JoinUnder(root_, done) + "/" + part;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) {
        throw CompileError(Where(t) + ": external data file '" + location +
                           "' does not exist in the model's directory (" + root_ + ")");
      }
      if (!S_ISLNK(st.st_mode)) {
        if (!todo.empty() && !S_ISDIR(st.st_mode)) {
          throw CompileError(Where(t) + ": external data location '" + location + "': '" + part +
                             "' in it is not a directory");
        }
        done.push_back(std::move(part));
        continue;
      }
      if (++links > kMaxSymlinks) {
        throw CompileError(Where(t) + ": external data location '" + location +
                           "' passes through more than " + std::to_string(kMaxSymlinks) +
                           " symlinks");
      }
      std::vector<char> buf(static_cast<size_t>(PATH_MAX) + 1);
      ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size() - 1);
      if (n < 0) {
        throw CompileError(Where(t) + ": cannot read the symlink '" + path +
                           "': " + std::strerror(errno));
      }
      std::string target(buf.data(), static_cast<size_t>(n));
      if (!target.empty() && target[0] == '/') {
        // An absolute target is followed only where its text already lies under root_.
        if (target.compare(0, root_.size(), root_) != 0 ||
            (target.size() > root_.size() && target[root_.size()] != '/' && root_ != "/")) {
          throw escape();
        }
        target = target.substr(root_.size());
        done.clear();
      }
      std::vector<std::string> parts = SplitPath(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
    }
    if (done.empty()) {
      throw CompileError(Where(t) + ": external data location '" + location +
                         "' names the model's directory itself, not a file");
    }
    return JoinUnder(root_, done);
  }

  // The tensor's byte size from its type and dims, or -1 where it has no fixed element size.
  static int64_t ExpectedBytes(const onnx::TensorProto& t) {
    DLDataType dtype;
    try {
      dtype = OnnxToDType(t.data_type(), "");
    } catch (const CompileError&) {
      return -1;  // the importer names the type
    }
    uint64_t bytes = static_cast<uint64_t>(DTypeBytes(dtype));
    for (int64_t d : t.dims()) {
      if (d < 0) return -1;
      if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
        return -1;
      }
      bytes *= static_cast<uint64_t>(d);
    }
    return bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? -1
               : static_cast<int64_t>(bytes);
  }

  std::string ReadRange(const onnx::TensorProto& t, const ExternalRef& ref,
                        const std::string& path) const {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      throw CompileError(Where(t) + ": cannot open external data file '" + ref.location +
                         "': " + std::strerror(errno));
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      throw CompileError(Where(t) + ": external data location '" + ref.location +
                         "' is not a regular file");
    }
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    if (ref.offset > file_size) {
      throw CompileError(Where(t) + ": external data offset " + std::to_string(ref.offset) +
                         " is beyond the end of '" + ref.location + "' (" +
                         std::to_string(file_size) + " bytes)");
    }
    const uint64_t length = ref.has_length ? ref.length : file_size - ref.offset;
    if (length > file_size - ref.offset) {
      throw CompileError(Where(t) + ": external data at offset " + std::to_string(ref.offset) +
                         " with length " + std::to_string(length) + " goes past the end of '" +
                         ref.location + "' (" + std::to_string(file_size) + " bytes)");
    }
    const int64_t expected = ExpectedBytes(t);
    if (expected >= 0 && static_cast<uint64_t>(expected) != length) {
      throw CompileError(Where(t) + " needs " + std::to_string(expected) + " bytes for its type " +
                         "and dims, but its external data in '" + ref.location + "' is " +
                         std::to_string(length) + " bytes long");
    }
    std::string bytes(static_cast<size_t>(length), '\0');
    for (uint64_t done = 0; done < length;) {
      ssize_t n = ::pread(fd, &bytes[done], static_cast<size_t>(length - done),
                          static_cast<off_t>(ref.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw CompileError(Where(t) + ": reading " + std::to_string(length) + " bytes at offset " +
                           std::to_string(ref.offset) + " of '" + ref.location +
                           "' failed: " + (n < 0 ? std::strerror(errno) : "the file ended early"));
      }
      done += static_cast<uint64_t>(n);
    }
    return bytes;
  }

  std::string dir_;
  std::string source_;
  std::string root_;  // realpath of the model's directory
};

}  // namespace

void LoadExternalData(onnx::ModelProto* model, const std::string& model_dir,
                      const std::string& source) {
  bool any = false;
  VisitGraph(model->mutable_graph(), [&](onnx::TensorProto* t) {
    any = any || t->data_location() == onnx::TensorProto::EXTERNAL;
  });
  if (!any) return;
  ExternalDataReader reader(model_dir, source);
  VisitGraph(model->mutable_graph(), [&](onnx::TensorProto* t) { reader.Load(t); });
}

void RefuseExternalData(onnx::ModelProto* model, const std::string& source) {
  VisitGraph(model->mutable_graph(), [&](onnx::TensorProto* t) {
    if (t->data_location() != onnx::TensorProto::EXTERNAL) return;
    throw CompileError(source + ": tensor '" + t->name() +
                       "' keeps its data in an external file, which emberc resolves against the "
                       "model's directory; compile the model from its file path");
  });
}

}  // namespace compiler
}  // namespace ember
