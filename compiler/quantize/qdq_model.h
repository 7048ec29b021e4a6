// The ONNX side of `emberc quantize`: the float model made ready (opset 13 or later, every node
// named, BatchNormalization folded into the Conv before it), the plan of what is quantized, the
// calibration copy with extra graph outputs, and the QDQ model written from the ranges.
//
// The QDQ layout (what compiler/transform/fuse_qdq.cc fuses into integer QLinearConv /
// QLinearMatMul, and ORT into its integer kernels):
//   x -> QuantizeLinear -> DequantizeLinear -> Conv(x_dq, DQ(w int8, per channel), DQ(b int32))
//     [-> Relu] -> QuantizeLinear -> DequantizeLinear -> consumers
// A Conv/MatMul/Gemm's activation input and its output (after a Relu that is its only reader, or
// a Clip(0, hi) that is: that Clip is dropped, since with the output's range [0, <= hi] its zero
// point is 0 and QuantizeLinear saturates exactly where the Clip would) get a Q/DQ pair; every
// reader of a paired tensor except excluded nodes reads the DequantizeLinear's output. Ops
// between pairs (Add, MaxPool, GlobalAveragePool, Concat, ...) stay float; a pair after one that
// only moves or selects values takes the range of the pair before it (QuantPlan::same_range_as).
#ifndef EMBER_COMPILER_QUANTIZE_QDQ_MODEL_H_
#define EMBER_COMPILER_QUANTIZE_QDQ_MODEL_H_

#include <ember/compiler/quantize.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief The default-domain opset a QDQ model needs (DequantizeLinear's axis). */
constexpr int64_t kQdqMinOpset = 13;

/*! \brief One node to quantize. */
struct QuantLayer {
  std::string node;          // node name
  std::string op;            // Conv, MatMul, Gemm
  std::string input;         // the activation it reads
  std::string weight;        // initializer
  std::string bias;          // initializer quantized to int32, or ""
  int64_t axis = 0;          // of the weight's output channels
  std::string output;        // the tensor quantized after it (past an absorbed Relu / Clip)
  std::string dropped_clip;  // the Clip node absorbed into the output's range, or ""
};

struct QuantPlan {
  std::vector<QuantLayer> layers;
  std::vector<std::string> activations;  // tensors that get a Q/DQ pair, in graph order
  std::set<std::string> excluded;        // node names kept float
  /*! \brief Activations written by an op that only moves or selects values (MaxPool, Flatten,
   *  Reshape, ...) from another paired activation: they take its range, so their pair
   *  requantizes nothing (each value stays on the same step). */
  std::map<std::string, std::string> same_range_as;
};

/*! \brief Refuses a model that is not float32 or is already quantized; raises an opset below 13
 *  to 13 (version converter); names unnamed nodes OP_INDEX; folds BatchNormalization into a
 *  Conv whose only reader it is. \p source names the model in errors. */
void PrepareFloatModel(onnx::ModelProto* model, const std::string& source);

/*! \brief What to quantize; refuses an --exclude name that is no node, and a model with nothing
 *  to quantize. */
QuantPlan PlanQuantization(const onnx::ModelProto& model, const std::vector<std::string>& exclude,
                           const std::string& source);

/*! \brief \p model with each of \p tensors (float32) appended to the graph outputs, unless it
 *  already is one or is a graph input. */
onnx::ModelProto WithExtraOutputs(const onnx::ModelProto& model,
                                  const std::vector<std::string>& tensors);

/*! \brief The QDQ model. \p ranges holds [lo, hi] for every tensor of plan.activations. */
onnx::ModelProto WriteQdqModel(const onnx::ModelProto& model, const QuantPlan& plan,
                               const std::map<std::string, std::pair<float, float>>& ranges,
                               bool per_tensor_weights);

/*! \brief The tensor of the QDQ model that holds \p tensor's quantized value (its
 *  DequantizeLinear's output when it got a pair, else \p tensor). */
std::string DequantizedName(const onnx::ModelProto& qdq_model, const std::string& tensor);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_QUANTIZE_QDQ_MODEL_H_
