// Private: what the DSO module (dlopen) and the system library (static registration) share. They
// differ only in how a symbol is found; looking a function up, wiring the library's runtime hooks
// and unpacking an embedded module blob are the same for both.
#ifndef EMBER_RUNTIME_LIBRARY_MODULE_H_
#define EMBER_RUNTIME_LIBRARY_MODULE_H_

#include <ember/runtime/module.h>
#include <ember/runtime/packed_func.h>

#include <string>

namespace ember::runtime {

/*!
 * \brief A module whose functions are the exported TVMBackendPackedCFunc symbols of compiled
 * code. GetFunction resolves `__tvm_main__` to the entry's name and wraps the kernel as a
 * PackedFunc that keeps the module alive.
 */
class LibraryModuleNode : public ModuleNode {
 public:
  /*! \brief The address of symbol \p name, or nullptr if the library has none. */
  virtual void* GetSymbol(const char* name) const = 0;

  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) final;
};

/*!
 * \brief Finishes loading \p node: fills the hooks a compiled library may define
 * (`__tvm_module_ctx`, set to the module, and TVM's writable function-pointer globals
 * `__TVMFuncCall`, `__TVMBackendAllocWorkspace`...), then, if it embeds a `__tvm_dev_mblob`,
 * rebuilds and links the modules packed there. Returns the root: the first blob module when the
 * blob carries an import tree, else the library with any blob modules imported. \p source names
 * the library in errors.
 */
Module InitLibraryModule(ObjectPtr<LibraryModuleNode> node, const std::string& source);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_LIBRARY_MODULE_H_
