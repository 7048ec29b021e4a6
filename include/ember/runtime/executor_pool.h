/*!
 * \file ember/runtime/executor_pool.h
 * \brief A thread-safe run: inputs in, outputs out, callable from many threads at once (what
 * ONNX Runtime's Session::Run offers).
 *
 *   ExecutorPool pool(LoadArtifact("out/"));                  // the factory's params, shared
 *   std::vector<NDArray> outs = pool.Run({{"data", input}});  // from any thread, concurrently
 *
 * A pool holds executors made by one GraphExecutorFactory, so they share its params read-only
 * (params are held once, whatever the number of executors). A call checks an idle executor out
 * (making a new one when none is idle and the pool is below its bound, else waiting for one), sets
 * every input, runs, copies the outputs out and checks the executor back in, also when the call
 * fails. Every call sets every input, so no call sees another call's inputs; the outputs are the
 * caller's own arrays, never views of an executor's memory.
 *
 * The pool is also a module (AsModule(), type key "ExecutorPool", the global
 * `runtime.create_executor_pool(factory, max_executors)`), whose functions C and Python call:
 *   run(in_0, ..., in_{k-1}, out_0, ..., out_{m-1})  thread-safe; arrays (DLTensor*) by position:
 *                                   the k inputs in get_input_name order, then the m outputs,
 *                                   which are written
 *   get_num_inputs, get_input_name(i), get_num_outputs, get_num_executors
 *   get_io_json                     {"inputs": [{"name", "shape", "dtype"}...],
 *                                    "outputs": [{"shape", "dtype"}...]}
 *
 * Inputs here are the graph's inputs that the factory does not hold as params (get_input_info's).
 * Kernels' parallel loops from concurrent runs share the process's thread pool: the launch that
 * finds it busy runs its tasks on its own calling thread (threading.h), so concurrent runs are
 * correct and each one uses at least its own thread.
 */
#ifndef EMBER_RUNTIME_EXECUTOR_POOL_H_
#define EMBER_RUNTIME_EXECUTOR_POOL_H_

#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>

#include <string>
#include <utility>
#include <vector>

namespace ember::runtime {

/*!
 * \brief The pool module over \p factory (a GraphExecutorFactory module, as LoadArtifact returns):
 * at most \p max_executors executors (0 = as many as there are concurrent calls), made on the
 * cpu as calls need them. One executor is made at once, so a bad artifact fails here.
 */
TVM_DLL Module CreateExecutorPool(Module factory, int max_executors = 0);

/*! \brief C++ view of the pool module. Every member function may be called from any thread. */
class TVM_DLL ExecutorPool {
 public:
  explicit ExecutorPool(Module factory, int max_executors = 0);

  /*! \brief Inputs the caller gives (params excluded), in the order Run takes them by position. */
  int NumInputs() const;
  const std::string& InputName(int index) const;
  int NumOutputs() const;
  /*! \brief Executors made so far (never more than the most concurrent calls, or the bound). */
  int NumExecutors() const;

  /*! \brief Runs with every input given by name; returns new arrays holding the outputs. */
  std::vector<NDArray> Run(const std::vector<std::pair<std::string, NDArray>>& inputs) const;
  /*! \brief Runs with the inputs by position; writes the outputs into \p outputs. */
  void Run(const std::vector<const DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) const;

  const Module& AsModule() const { return module_; }

 private:
  Module module_;
};

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_EXECUTOR_POOL_H_
