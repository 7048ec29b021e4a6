// GraphExecutorFactory: graph JSON + params + kernel library in one module; artifact loading
// (three-file directory or single .so) and the __tvm_dev_mblob serializer.
//
// The factory's binary form (SaveToBinary, and what
// `runtime.module.loadbinary_GraphExecutorFactory` reads; TVM's layout, dmlc stream encoding):
//   string graph_json            (u64 length + bytes)
//   u64 count
//   vector<string> names         (u64 count + strings)
//   count arrays                 (NDArray::Save encoding, as in params.bin)
//   string module_name           ("default")
#include <dlfcn.h>
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "graph_executor/graph_executor.h"
#include "ndarray_header.h"

namespace ember::runtime {
namespace {

constexpr const char* kFactoryTypeKey = "GraphExecutorFactory";
constexpr const char* kLibTypeKey = "_lib";
constexpr const char* kImportTreeKey = "_import_tree";

class GraphExecutorFactory : public ModuleNode {
 public:
  GraphExecutorFactory(std::string graph_json, const NamedArrays& params, std::string module_name)
      : graph_json_(std::move(graph_json)), module_name_(std::move(module_name)) {
    for (const auto& [name, arr] : params) {
      if (params_.emplace(name, arr).second) names_.push_back(name);
    }
  }

  const char* type_key() const final { return kFactoryTypeKey; }

  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) final {
    std::string n = name.str();
    if (n == module_name_) {
      return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
        *rv = CreateExecutor(GraphExecutorDevicesFromArgs(args, 0));
      });
    }
    if (n == "debug_create") {
      return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
        EMBER_CHECK_GE(args.size(), 1) << "debug_create(module_name, devices...)";
        std::string which = args[0].operator std::string();
        EMBER_CHECK(which == module_name_) << "debug_create: no model named \"" << which
                                           << "\"; this factory holds \"" << module_name_ << "\"";
        *rv = CreateExecutor(GraphExecutorDevicesFromArgs(args, 1));
      });
    }
    if (n == "get_graph_json") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = graph_json_; });
    }
    if (n == "get_graph_params" || n == "get_params") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) {
        Map<String, NDArray> out;
        for (const auto& name : names_) out.Set(String(name), params_.at(name));
        *rv = out;
      });
    }
    if (n == "remove_params") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) {
        auto copy = make_object<GraphExecutorFactory>(graph_json_, NamedArrays(), module_name_);
        for (const Module& m : imports_) copy->Import(m);
        *rv = Module(ObjectPtr<Object>(std::move(copy)));
      });
    }
    return PackedFunc();
  }

  void SaveToBinary(ByteWriter* w) final {
    w->WriteString(graph_json_);
    w->Write<uint64_t>(names_.size());
    w->WriteStringVector(names_);
    for (const auto& name : names_) params_.at(name).Save(w);
    w->WriteString(module_name_);
  }

  Module CreateExecutor(const std::vector<DLDevice>& devs) {
    EMBER_CHECK(!imports_.empty()) << "GraphExecutorFactory: no kernel library imported";
    auto exec = make_object<GraphExecutor>();
    exec->Init(graph_json_, imports_[0], devs, &params_);
    return Module(ObjectPtr<Object>(std::move(exec)));
  }

 private:
  std::string graph_json_;
  ParamMap params_;  // read-only after construction: executors view these arrays
  std::vector<std::string> names_;
  std::string module_name_;
};

// Drops whole pages of [begin, end) from the resident set. Only for bytes of a file mapping that
// were read, never written: the kernel re-reads them from the file if they are touched again.
void ReleaseReadPages(const char* begin, const char* end) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  uintptr_t hi = reinterpret_cast<uintptr_t>(end) / page * page;
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

// True if [p, p + n) lies in a loaded shared library (a file mapping, not the heap).
bool InLoadedLibrary(const char* p, size_t n) {
  Dl_info a{}, b{};
  return n > 0 && dladdr(p, &a) != 0 && dladdr(p + n - 1, &b) != 0 && a.dli_fbase == b.dli_fbase;
}

// One array in the params encoding (see NDArray::Load), copied out in chunks so that the bytes
// already copied can be dropped from memory while a large array is still being read.
NDArray LoadArrayReleasing(ByteReader* r, const char* region_begin) {
  constexpr size_t kChunk = size_t{1} << 20;  // bytes resident twice at most while copying
  NDArray arr = ReadArrayHeader(r);
  const size_t expected = arr.NBytes();
  char* dst = static_cast<char*>(arr->data);
  for (size_t done = 0; done < expected;) {
    size_t n = std::min(kChunk, expected - done);
    std::memcpy(dst + done, r->Take(n, "array data"), n);
    done += n;
    ReleaseReadPages(region_begin, r->Take(0, "array data"));
  }
  return arr;
}

// Reads the params arrays of a factory blob or params file; when \p release, the bytes already
// consumed are dropped from memory as it goes, so params are never resident twice.
NamedArrays ReadArrays(ByteReader* r, const std::vector<std::string>& names, bool release) {
  const char* begin = r->Take(0, "params");
  NamedArrays out;
  out.reserve(names.size());
  for (const std::string& name : names) {
    try {
      out.emplace_back(name, release ? LoadArrayReleasing(r, begin) : NDArray::Load(r));
    } catch (const Error& e) {
      EMBER_LOG_FATAL << e.what() << " (while reading param \"" << name << "\")";
    }
  }
  return out;
}

Module FactoryLoadBinary(void* stream) {
  auto* r = static_cast<ByteReader*>(stream);
  std::string graph_json = r->ReadString("factory graph json");
  uint64_t count = r->Read<uint64_t>("factory param count");
  std::vector<std::string> names = r->ReadStringVector("factory param names");
  if (count != names.size()) {
    EMBER_LOG_FATAL << r->source() << ": the embedded factory names " << names.size()
                    << " params but holds " << count;
  }
  bool release = InLoadedLibrary(r->Take(0, "params"), r->remaining());
  NamedArrays params = ReadArrays(r, names, release);
  std::string module_name = r->ReadString("factory module name");
  return CreateGraphExecutorFactory(graph_json, params, Module(), module_name);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void CheckFile(const std::string& path, const std::string& dir) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    EMBER_LOG_FATAL << "load_artifact: " << path << " is missing; an artifact directory holds "
                    << kGraphJsonFile << ", " << kLibFile << " and " << kParamsFile << " (" << dir
                    << ")";
  }
}

// params.bin read through a read-only mapping whose pages are released as arrays are copied out.
NamedArrays LoadParamsMapped(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) EMBER_LOG_FATAL << "cannot open " << path << ": " << std::strerror(errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    EMBER_LOG_FATAL << "cannot stat " << path << ": " << std::strerror(errno);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    EMBER_LOG_FATAL << path << ": empty file; not a params file";
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) EMBER_LOG_FATAL << "cannot map " << path << ": " << std::strerror(errno);
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  ByteReader r(static_cast<const char*>(map), size, path);
  uint64_t magic = r.Read<uint64_t>("params magic");
  if (magic != kParamsListMagic) {
    EMBER_LOG_FATAL << path
                    << ": bad params magic (expected 0xF7E58D4F05049CB7): not a params file";
  }
  r.Read<uint64_t>("params reserved field");
  std::vector<std::string> names = r.ReadStringVector("param names");
  uint64_t count = r.Read<uint64_t>("array count");
  if (count != names.size()) {
    EMBER_LOG_FATAL << path << ": the file names " << names.size() << " arrays but holds " << count;
  }
  NamedArrays params = ReadArrays(&r, names, /*release=*/true);
  EMBER_CHECK_EQ(r.remaining(), size_t{0}) << path << ": trailing bytes after the last array";
  return params;
}

}  // namespace

Module CreateGraphExecutorFactory(const std::string& graph_json, const NamedArrays& params,
                                  Module lib, const std::string& module_name) {
  auto factory = make_object<GraphExecutorFactory>(graph_json, params, module_name);
  if (lib.defined()) factory->Import(lib);
  return Module(ObjectPtr<Object>(std::move(factory)));
}

Module FactoryCreateExecutor(const Module& factory, const std::vector<DLDevice>& devs) {
  if (!factory.defined() || std::strcmp(factory->type_key(), kFactoryTypeKey) != 0) {
    EMBER_LOG_FATAL << "expected a " << kFactoryTypeKey << " module (what load_artifact returns), "
                    << "got " << (factory.defined() ? factory->type_key() : "a null module");
  }
  auto* node = static_cast<GraphExecutorFactory*>(factory.get());
  return node->CreateExecutor(devs);
}

Module LoadArtifact(const std::string& path) {
  if (!IsDirectory(path)) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      EMBER_LOG_FATAL << "load_artifact: " << path << " does not exist; give an artifact "
                      << "directory (graph.json, lib.so, params.bin) or a single .so";
    }
    Module m = Module::LoadFromFile(path);
    if (std::strcmp(m->type_key(), kFactoryTypeKey) != 0) {
      EMBER_LOG_FATAL << "load_artifact: " << path << " holds kernels but no graph (no "
                      << kFactoryTypeKey << " in __tvm_dev_mblob); give the artifact directory "
                      << "with graph.json and params.bin instead";
    }
    return m;
  }
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string graph_path = dir + "/" + kGraphJsonFile;
  std::string lib_path = dir + "/" + kLibFile;
  std::string params_path = dir + "/" + kParamsFile;
  CheckFile(graph_path, dir);
  CheckFile(lib_path, dir);
  CheckFile(params_path, dir);
  std::string graph_json = ReadFileToString(graph_path);
  ParseGraphJson(graph_json, graph_path);  // refuse a bad graph now, naming the file
  Module lib = Module::LoadFromFile(lib_path);
  NamedArrays params = LoadParamsMapped(params_path);
  return CreateGraphExecutorFactory(graph_json, params, lib, kDefaultModuleName);
}

std::string SerializeFactoryBlob(const Module& factory) {
  EMBER_CHECK(factory.defined() && std::strcmp(factory->type_key(), kFactoryTypeKey) == 0)
      << "SerializeFactoryBlob: expected a " << kFactoryTypeKey << " module";
  std::string payload;
  ByteWriter w(&payload);
  w.Write<uint64_t>(3);  // entries: the factory, the library, the import tree
  w.WriteString(kFactoryTypeKey);
  const_cast<ModuleNode*>(static_cast<const ModuleNode*>(factory.get()))->SaveToBinary(&w);
  w.WriteString(kLibTypeKey);
  w.WriteString(kImportTreeKey);
  // Module 0 (the factory, the root) imports module 1 (the library); module 1 imports nothing.
  w.WriteVector(std::vector<uint64_t>{0, 1, 1});
  w.WriteVector(std::vector<uint64_t>{1});
  std::string blob;
  ByteWriter head(&blob);
  head.Write<uint64_t>(payload.size());
  blob += payload;
  return blob;
}

EMBER_REGISTER_GLOBAL("runtime.module.loadbinary_GraphExecutorFactory")
    .set_body_typed([](void* stream) { return FactoryLoadBinary(stream); });
// TVM before v0.8 called it GraphRuntimeFactory; the bytes are the same.
EMBER_REGISTER_GLOBAL("runtime.module.loadbinary_GraphRuntimeFactory")
    .set_body_typed([](void* stream) { return FactoryLoadBinary(stream); });

EMBER_REGISTER_GLOBAL("runtime.load_artifact").set_body_typed([](std::string path) {
  return LoadArtifact(path);
});

EMBER_REGISTER_GLOBAL("runtime.SerializeFactoryBlob").set_body([](TVMArgs args, TVMRetValue* rv) {
  std::string blob = SerializeFactoryBlob(args[0].operator Module());
  *rv = TVMByteArray{blob.data(), blob.size()};
});

// TVM's argument order: graph_json, lib, module_name, then name/array pairs.
EMBER_REGISTER_GLOBAL("tvm.graph_executor_factory.create")
    .set_body([](TVMArgs args, TVMRetValue* rv) {
      EMBER_CHECK(args.size() >= 3 && (args.size() - 3) % 2 == 0)
          << "tvm.graph_executor_factory.create(graph_json, lib, module_name, [name, array]...)";
      NamedArrays params;
      for (int i = 3; i < args.size(); i += 2) {
        params.emplace_back(args[i].operator std::string(), args[i + 1].operator NDArray());
      }
      *rv = CreateGraphExecutorFactory(args[0].operator std::string(), params,
                                       args[1].operator Module(), args[2].operator std::string());
    });

}  // namespace ember::runtime
