/*!
 * \file ember/runtime/module.h
 * \brief Modules: named packed functions loaded from a file (lib.so), linked in statically (the
 * system library), or built at run time (the graph executor).
 *
 * Loading dispatches on the file extension through the global `runtime.module.loadfile_<ext>`
 * (`so` is built in). A shared library may embed more modules in its `__tvm_dev_mblob` symbol;
 * each is rebuilt by the global `runtime.module.loadbinary_<type_key>`, which receives a
 * ByteReader* (as void*) positioned at that module's bytes, and returns a Module.
 */
#ifndef EMBER_RUNTIME_MODULE_H_
#define EMBER_RUNTIME_MODULE_H_

#include <ember/runtime/byte_stream.h>
#include <ember/runtime/container.h>
#include <ember/runtime/object.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember::runtime {

class PackedFunc;
class Module;

/*! \brief Base of every module implementation. */
class ModuleNode : public Object {
 public:
  virtual ~ModuleNode() = default;

  /*! \brief What kind of module this is: "library", "system_lib", "GraphExecutorFactory", ... */
  virtual const char* type_key() const = 0;

  /*!
   * \brief The function called \p name, or a null PackedFunc if there is none. \p sptr_to_self
   * owns this module; returned closures hold it so the module outlives them. GetFuncFromEnv
   * passes a null \p sptr_to_self (its cache lives in the module): closures must not need it.
   */
  virtual PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) = 0;

  /*! \brief Writes the module to a file; throws if this kind of module cannot. */
  virtual void SaveToFile(const String& file_name, const String& format);
  /*! \brief Serialises the module for embedding in a blob; throws if unsupported. */
  virtual void SaveToBinary(ByteWriter* writer);
  /*! \brief Source text, if the module has any. */
  virtual String GetSource(const String& format = "");

  /*!
   * \brief Looks \p name up here and, if \p query_imports, in imported modules depth first.
   * Returns a null PackedFunc if absent.
   */
  PackedFunc GetFunction(const String& name, bool query_imports = false);
  /*! \brief Makes \p other's functions reachable from this module's kernels. */
  void Import(Module other);
  const std::vector<Module>& imports() const { return imports_; }
  /*!
   * \brief Lookup used by kernels (TVMBackendGetFuncFromEnv): this module, its imports, then the
   * global registry; results are cached. Throws naming the function if none is found.
   */
  const PackedFunc* GetFuncFromEnv(const String& name);

  static constexpr const char* _type_key = "runtime.Module";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeModule;
  EMBER_DECLARE_BASE_OBJECT_INFO(ModuleNode, Object);

 protected:
  std::vector<Module> imports_;

 private:
  std::mutex env_mutex_;
  std::unordered_map<std::string, std::unique_ptr<PackedFunc>> env_cache_;
};

/*! \brief A handle to a module. */
class Module : public ObjectRef {
 public:
  EMBER_DEFINE_MUTABLE_OBJECT_REF_METHODS(Module, ObjectRef, ModuleNode);

  /*! \brief The function \p name, or a null PackedFunc (check with `!= nullptr`). */
  PackedFunc GetFunction(const String& name, bool query_imports = false) const;
  void Import(Module other) const;

  /*!
   * \brief Loads a module file. \p format defaults to the file extension; throws naming the file
   * when the format is unknown or loading fails.
   */
  static Module LoadFromFile(const String& file_name, const String& format = "");
};

/*! \brief Names of the symbols a compiled library shares with the runtime (TVM's names). */
namespace symbol {
/*! A writable `void*` in the library the loader points at its module (for GetFuncFromEnv). */
constexpr const char* kModuleCtx = "__tvm_module_ctx";
/*! The embedded module blob: u64 size, then the serialised modules. */
constexpr const char* kDevModuleBlob = "__tvm_dev_mblob";
/*! A char array naming the function `__tvm_main__` stands for. */
constexpr const char* kMainFunc = "__tvm_main__";
/*! The global holding the system library's module. */
constexpr const char* kSystemLibGlobal = "runtime.SystemLib";
}  // namespace symbol

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_MODULE_H_
