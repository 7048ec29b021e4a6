/*!
 * \file ember/runtime/graph_executor.h
 * \brief Running a compiled graph: artifact loading, the graph executor factory, the executor's
 * per-node profiler and a time evaluator.
 *
 *   Module factory = LoadArtifact("out/");            // graph.json + lib.so + params.bin, or x.so
 *   Module gmod = factory.GetFunction("default")(kCPU);
 *   gmod.GetFunction("set_input")("data", input);
 *   gmod.GetFunction("run")();
 *   NDArray out = gmod.GetFunction("get_output")(0);
 *
 * The executor module's functions keep TVM's names: set_input (name or index), set_input_zero_copy,
 * set_output_zero_copy, run, get_output (index[, out]), get_input, get_num_inputs,
 * get_num_outputs, get_input_index, get_input_info, get_output_info, load_params (bytes),
 * share_params (module, bytes), plus the profiler: run_individual, profile, profile_json.
 * The factory's: default (and its module name), get_graph_json, get_graph_params (alias
 * get_params), remove_params, debug_create.
 *
 * As in TVM, run() does not require every input to be set: an input never set holds zeros (each
 * executor zero-fills its inputs when it is created), so such runs are repeatable.
 */
#ifndef EMBER_RUNTIME_GRAPH_EXECUTOR_H_
#define EMBER_RUNTIME_GRAPH_EXECUTOR_H_

#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/packed_func.h>

#include <string>
#include <vector>

namespace ember::runtime {

/*! \brief The artifact files of the three-file form. */
constexpr const char* kGraphJsonFile = "graph.json";
constexpr const char* kLibFile = "lib.so";
constexpr const char* kParamsFile = "params.bin";
/*! \brief The module name of a factory built by Ember or by TVM's relay.build. */
constexpr const char* kDefaultModuleName = "default";

/*!
 * \brief Loads an artifact and returns its GraphExecutorFactory module: either a directory holding
 * graph.json, lib.so and params.bin, or one shared library whose `__tvm_dev_mblob` embeds the
 * factory (TVM's export_library form). Params are read without holding the file twice.
 * Also registered as the global `runtime.load_artifact`.
 */
Module LoadArtifact(const std::string& path);

/*!
 * \brief A factory over \p lib (the kernel library) with graph JSON and params. Executors it makes
 * share the params read-only. Also the global `tvm.graph_executor_factory.create`.
 */
Module CreateGraphExecutorFactory(const std::string& graph_json, const NamedArrays& params,
                                  Module lib, const std::string& module_name = kDefaultModuleName);

/*!
 * \brief A standalone executor without params (set them with load_params). Also the global
 * `tvm.graph_executor.create` (graph_json, lib, device_type, device_id, ...).
 */
Module CreateGraphExecutor(const std::string& graph_json, Module lib,
                           const std::vector<DLDevice>& devs);

/*!
 * \brief The `__tvm_dev_mblob` contents for a single-file artifact: the u64 byte count, then a
 * u64 entry count and the entries (type key string, then payload) "GraphExecutorFactory" (the
 * factory's SaveToBinary), "_lib" (the library the blob lives in) and "_import_tree" (the factory
 * imports the library). A compiler embeds these bytes in lib.so under that symbol.
 */
std::string SerializeFactoryBlob(const Module& factory);

/*! \brief Time of one node measured by run_individual. */
struct NodeTiming {
  int node_id = 0;
  std::string name;          // node name
  std::string func_name;     // kernel name
  std::string shape;         // shape of output 0, e.g. "[1, 1000]"
  std::string input_shapes;  // shapes of the inputs, e.g. "[1, 784], [256, 784]"
  std::string dtype;         // dtype of output 0
  double mean_us = 0;        // mean over repeats of the per-call time
};

/*! \brief The per-node profile: nodes sorted by time, largest first, with their share. */
struct ProfileReport {
  std::vector<NodeTiming> nodes;
  double total_us = 0;
  int number = 0;
  int repeat = 0;
  /*! \brief A text table: rank, node, kernel, shape, dtype, time (us), share (%). */
  std::string Table() const;
  /*! \brief The same as one JSON object {"total_us", "number", "repeat", "nodes": [...]}. */
  std::string Json() const;
};

/*!
 * \brief Runs each operator of \p executor (a module made by a factory or CreateGraphExecutor)
 * on its own, \p number times per measurement and \p repeat measurements; a measurement shorter
 * than \p min_repeat_ms is retried with more calls.
 */
ProfileReport ProfileExecutor(const Module& executor, int number, int repeat, int min_repeat_ms);

/*!
 * \brief Runs \p executor \p runs times (after one untimed run) and returns the runs as a Chrome
 * trace-event JSON object, which Perfetto and chrome://tracing open: one complete event ("ph":
 * "X") per operator and run, named after the node, with ts and dur in microseconds since the
 * first traced run, the process and thread that ran it, and in "args" the kernel ("op"), the
 * input and output shapes, the dtype and the run index.
 */
std::string TraceExecutorRuns(const Module& executor, int runs);

/*!
 * \brief Like TVM's time_evaluator: returns a function that calls \p f with its own arguments
 * \p number times per repeat, \p repeat times, growing number until a repeat lasts at least
 * \p min_repeat_ms, sleeping \p cooldown_ms between repeats, on a monotonic clock. The returned
 * function's result is TVM's: bytes holding one double per repeat, the mean seconds per call.
 * Also the global `runtime.time_evaluator` (module, func_name, device_type, device_id, number,
 * repeat, min_repeat_ms, cooldown_ms).
 */
PackedFunc TimeEvaluator(PackedFunc f, DLDevice dev, int number, int repeat, int min_repeat_ms,
                         int cooldown_ms = 0);

/*! \brief TimeEvaluator's measurement as numbers: mean seconds per call of each repeat. */
std::vector<double> TimeEvaluate(PackedFunc f, TVMArgs args, int number, int repeat,
                                 int min_repeat_ms, int cooldown_ms = 0);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_GRAPH_EXECUTOR_H_
