// Private: what the DSO module (dlopen) and the system library (static registration) share —
// wrapping exported kernels as PackedFuncs, wiring the library's runtime hooks, and unpacking an
// embedded module blob.
#ifndef EMBER_RUNTIME_LIBRARY_MODULE_H_
#define EMBER_RUNTIME_LIBRARY_MODULE_H_

#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/module.h>
#include <ember/runtime/packed_func.h>

#include <functional>
#include <string>

namespace ember::runtime {

/*! \brief Wraps a kernel exported as TVMBackendPackedCFunc; the closure keeps \p owner alive. */
PackedFunc WrapPackedCFunc(TVMBackendPackedCFunc f, const ObjectPtr<Object>& owner,
                           const std::string& name);

/*!
 * \brief Fills the hooks a compiled library may define: `__tvm_module_ctx` (set to \p module)
 * and TVM's writable function-pointer globals (`__TVMFuncCall`, `__TVMBackendAllocWorkspace`...).
 * \p lookup returns a symbol's address or nullptr.
 */
void InitLibraryContext(const std::function<void*(const char*)>& lookup, ModuleNode* module);

/*!
 * \brief Rebuilds the modules packed in a `__tvm_dev_mblob` and links them. Returns the root:
 * the first blob module when the blob carries an import tree, else \p lib with the blob modules
 * imported. \p source names the library in errors.
 */
Module ProcessLibraryBlob(const char* blob, const Module& lib, const std::string& source);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_LIBRARY_MODULE_H_
