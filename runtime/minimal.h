// The minimal runtime (CMake option EMBER_RUNTIME_MINIMAL) loads artifacts, sets inputs, runs and
// gets outputs, with the thread pool and the system library; it leaves out .npy files, the
// profiler and time evaluator, the debug executor's per-node timing, the executor pool, registry
// listing and DLPack import. The C entry points and executor functions of what it leaves out stay,
// and fail through ThrowNotInMinimalRuntime, so a caller gets -1 and a sentence instead of a crash
// or a missing symbol; its globals (runtime.time_evaluator, runtime.create_executor_pool) are not
// registered. C++ functions of the left-out files (npy.h, executor_pool.h, the profiler in
// graph_executor.h, Registry::ListNames, NDArray::FromDLPack) are absent symbols.
#ifndef EMBER_RUNTIME_MINIMAL_H_
#define EMBER_RUNTIME_MINIMAL_H_

#ifndef EMBER_RUNTIME_MINIMAL
#define EMBER_RUNTIME_MINIMAL 0
#endif

namespace ember::runtime {

/*! Throws Error: "<what> is not in this runtime: it was built with EMBER_RUNTIME_MINIMAL=ON ...".
 */
[[noreturn]] void ThrowNotInMinimalRuntime(const char* what);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_MINIMAL_H_
