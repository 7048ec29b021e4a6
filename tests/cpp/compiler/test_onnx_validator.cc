// Hostile attributes and ranks are refused with one line naming the node, op and attribute, before
// libonnx's shape inference (which crashed on them) sees the model.
#include <ember/compiler/frontend.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx_builder.h"

namespace ember {
namespace compiler {
namespace {

using testing::OnnxBuilder;

std::string ImportError(const OnnxBuilder& b) {
  try {
    ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_HAS(b, text)                                     \
  do {                                                                \
    std::string err = ImportError(b);                                 \
    EXPECT_NE(err.find(text), std::string::npos) << "error: " << err; \
  } while (0)

// x [1,1,4,4] through a 3x3 conv node 'c' with the given INTS attribute.
OnnxBuilder ConvWith(const std::string& attr, const std::vector<int64_t>& value) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4}).FloatInit("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  OnnxBuilder::IntsAttr(b.Node("Conv", "c", {"x", "w"}, {"y"}), attr, value);
  b.Output("y", {});
  return b;
}

OnnxBuilder PoolWith(const std::string& op, const std::vector<int64_t>& kernel,
                     const std::vector<int64_t>& strides) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4});
  auto* pool = b.Node(op, "p", {"x"}, {"y"});
  OnnxBuilder::IntsAttr(pool, "kernel_shape", kernel);
  OnnxBuilder::IntsAttr(pool, "strides", strides);
  b.Output("y", {});
  return b;
}

TEST(OnnxValidator, ZeroStridesAreRefusedNotDividedBy) {
  EXPECT_ERROR_HAS(ConvWith("strides", {0, 0}),
                   "m.onnx: node 'c' (Conv): attribute 'strides' must be positive, got [0,0]");
  EXPECT_ERROR_HAS(PoolWith("MaxPool", {2, 2}, {0, 0}),
                   "node 'p' (MaxPool): attribute 'strides' must be positive, got [0,0]");
  EXPECT_ERROR_HAS(ConvWith("strides", {-1, 1}), "attribute 'strides' must be positive");
}

TEST(OnnxValidator, ZeroDilationsAndKernelShapeAreRefused) {
  EXPECT_ERROR_HAS(ConvWith("dilations", {0, 0}),
                   "node 'c' (Conv): attribute 'dilations' must be positive, got [0,0]");
  EXPECT_ERROR_HAS(PoolWith("AveragePool", {0, 0}, {1, 1}),
                   "node 'p' (AveragePool): attribute 'kernel_shape' must be positive, got [0,0]");
  EXPECT_ERROR_HAS(ConvWith("pads", {0, 0, -1, 0}),
                   "attribute 'pads' must be non-negative, got [0,0,-1,0]");
}

TEST(OnnxValidator, HugeSizeAttributesAreRefusedBeforeLibonnxMultipliesThem) {
  // blocksize 2^40 squared wrapped to 0 and libonnx's inference divided by it (SIGFPE; found by
  // tests/fuzz/mutate_models.py).
  OnnxBuilder d2s;
  d2s.Input("x", {1, 8, 2, 2});
  OnnxBuilder::IntAttr(d2s.Node("DepthToSpace", "d", {"x"}, {"y"}), "blocksize", int64_t{1} << 40);
  d2s.Output("y", {});
  EXPECT_ERROR_HAS(d2s,
                   "node 'd' (DepthToSpace): attribute 'blocksize' must be at most 2147483647, got "
                   "1099511627776");
  EXPECT_ERROR_HAS(ConvWith("dilations", {1, int64_t{1} << 40}),
                   "node 'c' (Conv): attribute 'dilations' must be at most 2147483647, got "
                   "[1,1099511627776]");
}

TEST(OnnxValidator, AxisAttributesOfEveryOpAreBoundedByTheRank) {
  // libonnx narrowed LayerNormalization's axis 2^31 to int and indexed dims with it (SIGSEGV).
  OnnxBuilder ln;
  ln.Input("x", {2, 3, 4}).Input("scale", {4});
  OnnxBuilder::IntAttr(ln.Node("LayerNormalization", "ln", {"x", "scale"}, {"y"}), "axis",
                       int64_t{1} << 31);
  ln.Output("y", {});
  EXPECT_ERROR_HAS(ln,
                   "node 'ln' (LayerNormalization): attribute 'axis' must be in [-3, 2] for "
                   "input 'x' of rank 3, got 2147483648");
  OnnxBuilder below;  // -4 of a rank-3 input: libonnx indexed dims with -1 (SIGSEGV)
  below.Input("x", {2, 3, 4}).Input("scale", {4});
  OnnxBuilder::IntAttr(below.Node("LayerNormalization", "ln", {"x", "scale"}, {"y"}), "axis", -4);
  below.Output("y", {});
  EXPECT_ERROR_HAS(below, "attribute 'axis' must be in [-3, 2] for input 'x' of rank 3, got -4");
  OnnxBuilder rev;
  rev.Input("x", {4, 2, 3}).Input("lens", {2}, onnx::TensorProto::INT64);
  OnnxBuilder::IntAttr(rev.Node("ReverseSequence", "r", {"x", "lens"}, {"y"}), "time_axis", -9);
  rev.Output("y", {});
  EXPECT_ERROR_HAS(rev, "node 'r' (ReverseSequence): attribute 'time_axis' must be in [-3, 2]");
}

TEST(OnnxValidator, ScanInputsCountedAgainstTheNodesInputs) {
  // libonnx sized vectors by num_scan_inputs (2^40: std::bad_alloc from its inference).
  OnnxBuilder b;
  b.Input("s", {2}).Input("x", {3, 2});
  onnx::NodeProto* scan = b.Node("Scan", "scan", {"s", "x"}, {"s_out"});
  OnnxBuilder::IntAttr(scan, "num_scan_inputs", int64_t{1} << 40);
  b.Output("s_out", {});
  EXPECT_ERROR_HAS(b,
                   "node 'scan' (Scan): attribute 'num_scan_inputs' must be in [1, 2] (the "
                   "node's inputs), got 1099511627776");
}

// Past opset 17 libonnx's checker does not run; a Reshape without its shape input crashed
// canonicalization (mutation sweep). Counts come from the op's schema at the model's opset.
TEST(OnnxValidator, InputAndOutputCountsFollowTheSchema) {
  for (int64_t opset : {13, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    OnnxBuilder reshape(opset);
    reshape.Input("x", {2, 3});
    reshape.Node("Reshape", "r", {"x"}, {"y"});
    reshape.Output("y", {});
    EXPECT_ERROR_HAS(reshape, "node 'r' (Reshape): takes 2 inputs, got 1");

    OnnxBuilder empty_shape(opset);
    empty_shape.Input("x", {2, 3});
    empty_shape.Node("Reshape", "r", {"x", ""}, {"y"});
    empty_shape.Output("y", {});
    EXPECT_ERROR_HAS(empty_shape, "node 'r' (Reshape): input 1 (shape) is required, got none");

    OnnxBuilder relu(opset);
    relu.Input("x", {2, 3});
    relu.Node("Relu", "a", {"x", "x"}, {"y"});
    relu.Output("y", {});
    EXPECT_ERROR_HAS(relu, "node 'a' (Relu): takes 1 inputs, got 2");

    OnnxBuilder two_outputs(opset);
    two_outputs.Input("x", {2, 3});
    two_outputs.Node("Relu", "a", {"x"}, {"y", "z"});
    two_outputs.Output("y", {});
    EXPECT_ERROR_HAS(two_outputs, "node 'a' (Relu): takes 1 outputs, got 2");

    OnnxBuilder conv(opset);
    conv.Input("x", {1, 1, 4, 4});
    conv.Node("Conv", "c", {"x"}, {"y"});
    conv.Output("y", {});
    EXPECT_ERROR_HAS(conv, "node 'c' (Conv): takes 2 to 3 inputs, got 1");
  }
  // A schema older than the opset (ReduceMean changed at 18: axes became an input) bounds the
  // count from below only.
  OnnxBuilder reduce(18);
  reduce.Input("x", {2, 3}).IntInit("axes", {1}, {1});
  reduce.Node("ReduceMean", "m", {"x", "axes"}, {"y"});
  reduce.Output("y", {});
  EXPECT_EQ(ImportError(reduce), "");
}

// libonnx casts each dimension times its scale to an integer: NaN, inf, 1e30 made -2^63.
TEST(OnnxValidator, ResizeScalesMustBeFinitePositiveAndBounded) {
  const float nan = std::nanf("");
  for (float bad : {nan, std::numeric_limits<float>::infinity(), 1e30f, 0.0f, -2.0f}) {
    for (int64_t opset : {10, 13}) {
      OnnxBuilder b(opset);
      b.Input("x", {1, 1, 4, 4}).FloatInit("scales", {4}, {1, 1, bad, 2});
      const std::vector<std::string> inputs = opset == 10
                                                  ? std::vector<std::string>{"x", "scales"}
                                                  : std::vector<std::string>{"x", "", "scales"};
      b.Node("Resize", "r", inputs, {"y"});
      b.Output("y", {-1, -1, -1, -1});
      EXPECT_ERROR_HAS(b, "node 'r' (Resize): scales[2] must be a number in (0, 1048576], got ");
    }
  }
  OnnxBuilder upsample(7);
  upsample.Input("x", {1, 1, 4, 4});
  OnnxBuilder::FloatsAttr(upsample.Node("Upsample", "u", {"x"}, {"y"}), "scales", {1, 1, 2, nan});
  upsample.Output("y", {-1, -1, -1, -1});
  EXPECT_ERROR_HAS(upsample,
                   "node 'u' (Upsample): scales[3] must be a number in (0, 1048576], got nan");
}

TEST(OnnxValidator, ListLengthFollowsTheInputRank) {
  EXPECT_ERROR_HAS(
      ConvWith("strides", {1, 1, 1}),
      "attribute 'strides' must hold 2 values for input 'x' of rank 4, got 3: [1,1,1]");
  EXPECT_ERROR_HAS(ConvWith("pads", {1, 1}), "attribute 'pads' must hold 4 values");
}

TEST(OnnxValidator, ConvWeightRankMustMatchInputRank) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4}).FloatInit("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  b.Node("Conv", "c", {"x", "w"}, {"y"});
  b.Output("y", {});
  EXPECT_ERROR_HAS(b, "node 'c' (Conv): weight 'w' must have the rank of input 'x' (3), got 4");
}

TEST(OnnxValidator, RanksOfIntermediateValuesAreKnown) {
  // The conv's input comes from a node, so its rank is only known by inferring node by node.
  OnnxBuilder b;
  b.Input("x", {1, 1, 4}).FloatInit("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  b.Node("Relu", "r", {"x"}, {"h"});
  b.Node("Conv", "c", {"h", "w"}, {"y"});
  b.Output("y", {});
  EXPECT_ERROR_HAS(b, "weight 'w' must have the rank of input 'h' (3), got 4");
}

TEST(OnnxValidator, SpatialOpsNeedASpatialAxis) {
  OnnxBuilder b;
  b.Input("x", {1, 4});
  OnnxBuilder::IntsAttr(b.Node("MaxPool", "p", {"x"}, {"y"}), "kernel_shape", {2});
  b.Output("y", {});
  EXPECT_ERROR_HAS(b, "node 'p' (MaxPool): input 'x' must have rank >= 3");
}

TEST(OnnxValidator, TransposePermMustBeAPermutation) {
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 0}, {0, 2}, {1, 0, 2}}) {
    OnnxBuilder b;
    b.Input("x", {3, 4});
    OnnxBuilder::IntsAttr(b.Node("Transpose", "t", {"x"}, {"y"}), "perm", perm);
    b.Output("y", {});
    EXPECT_ERROR_HAS(b, "node 't' (Transpose): attribute 'perm' must");
  }
}

TEST(OnnxValidator, AxesAndAxisMustBeInRange) {
  OnnxBuilder softmax;
  softmax.Input("x", {3, 4});
  OnnxBuilder::IntAttr(softmax.Node("Softmax", "s", {"x"}, {"y"}), "axis", 2);
  softmax.Output("y", {});
  EXPECT_ERROR_HAS(softmax,
                   "node 's' (Softmax): attribute 'axis' must be in [-2, 1] for input 'x' of "
                   "rank 2, got 2");

  OnnxBuilder reduce(11);
  reduce.Input("x", {3, 4});
  OnnxBuilder::IntsAttr(reduce.Node("ReduceMean", "m", {"x"}, {"y"}), "axes", {1, -1});
  reduce.Output("y", {});
  EXPECT_ERROR_HAS(reduce, "node 'm' (ReduceMean): attribute 'axes' must not repeat an axis");

  OnnxBuilder concat;
  concat.Input("a", {3, 4}).Input("b", {3, 4, 1});
  OnnxBuilder::IntAttr(concat.Node("Concat", "cat", {"a", "b"}, {"y"}), "axis", 0);
  concat.Output("y", {});
  EXPECT_ERROR_HAS(concat, "node 'cat' (Concat): every input must have the rank of input 'a'");
}

// libonnx's GatherND inference sizes a vector with rank - batch_dims: a negative one reached it
// as a length_error that named neither the file nor the node.
TEST(OnnxValidator, GatherNdBatchDimsMustBeNonNegative) {
  OnnxBuilder b;
  b.Input("x", {3, 4}).IntInit("at", {1, 2}, {0, 1});
  OnnxBuilder::IntAttr(b.Node("GatherND", "g", {"x", "at"}, {"y"}), "batch_dims", -1);
  b.Output("y", {});
  EXPECT_ERROR_HAS(b, "node 'g' (GatherND): attribute 'batch_dims' must be non-negative, got -1");
}

// libonnx's inference reads a constant input's dims' worth of bytes from raw_data: a short one was
// a heap overflow inside libonnx (found by fuzz_onnx_import on a Pad's pads).
TEST(OnnxValidator, ConstantDataMustHoldWhatItsDimsSay) {
  OnnxBuilder raw;
  raw.Input("x", {3, 4});
  auto* pads = raw.model().mutable_graph()->add_initializer();
  pads->set_name("pads");
  pads->set_data_type(onnx::TensorProto::INT64);
  pads->add_dims(4);
  pads->set_raw_data(std::string(10, '\0'));
  raw.Node("Pad", "p", {"x", "pads"}, {"y"});
  raw.Output("y", {});
  EXPECT_ERROR_HAS(raw, "initializer 'pads' holds 10 bytes of raw_data, expected 32 for dims [4]");

  OnnxBuilder typed;
  typed.Input("x", {3, 4}).IntInit("shape", {2}, {12});
  typed.Node("Reshape", "r", {"x", "shape"}, {"y"});
  typed.Output("y", {});
  EXPECT_ERROR_HAS(typed, "initializer 'shape' holds 1 values, expected 2 for dims [2]");
}

TEST(OnnxValidator, ValidModelsStillImport) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4}).FloatInit("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  auto* conv = b.Node("Conv", "c", {"x", "w"}, {"h"});
  OnnxBuilder::IntsAttr(conv, "strides", {1, 1});
  OnnxBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  OnnxBuilder::IntsAttr(b.Node("Transpose", "t", {"h"}, {"y"}), "perm", {0, 1, 3, 2});
  b.Output("y", {1, 1, 4, 4});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[1,1,4,4]");
}

TEST(OnnxValidator, NegativeOrOverflowingSizesNameTheNode) {
  OnnxBuilder pad;
  pad.Input("x", {4}).IntInit("pads", {2}, {-100, 0});
  pad.Node("Pad", "p", {"x", "pads"}, {"y"});
  pad.Output("y", {});
  EXPECT_ERROR_HAS(pad, "node 'p' (Pad): output 'y' would have shape [-96]");

  OnnxBuilder expand;
  expand.Input("x", {3, 4}).IntInit("shape", {2}, {-3, 4});
  expand.Node("Expand", "e", {"x", "shape"}, {"y"});
  expand.Output("y", {});
  EXPECT_ERROR_HAS(expand, "node 'e' (Expand)");

  OnnxBuilder huge;
  huge.Input("x", {int64_t{1} << 40, int64_t{1} << 40});
  huge.Node("Relu", "r", {"x"}, {"y"});
  huge.Output("y", {});
  EXPECT_ERROR_HAS(huge,
                   "m.onnx: input 'x' of shape [1099511627776,1099511627776] is too large: its "
                   "element count overflows 64 bits, expected at most 4294967296 (2^32)");

  // libonnx's SAME-padding inference counts a dim down by the stride: a dim of 2^40 held emberc
  // for hours before any check of Ember's ran (found by tests/fuzz/mutate_models.py).
  OnnxBuilder pool;
  pool.Input("x", {1, 1, int64_t{1} << 40, 5});
  onnx::NodeProto* p = pool.Node("AveragePool", "p", {"x"}, {"y"});
  OnnxBuilder::IntsAttr(p, "kernel_shape", {3, 3});
  OnnxBuilder::IntsAttr(p, "strides", {2, 2});
  OnnxBuilder::StringAttr(p, "auto_pad", "SAME_UPPER");
  pool.Output("y", {});
  EXPECT_ERROR_HAS(pool,
                   "m.onnx: input 'x' of shape [1,1,1099511627776,5] is too large: "
                   "5497558138880 elements, expected at most 4294967296 (2^32)");
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp) of uint8 x and a `w_elem` weight,
// every operand a graph input.
OnnxBuilder QLinearConvOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                          int32_t w_elem = onnx::TensorProto::INT8) {
  using onnx::TensorProto;
  OnnxBuilder b;
  b.Input("x", x, TensorProto::UINT8).Input("xs", {}).Input("xz", {}, TensorProto::UINT8);
  b.Input("w", w, w_elem).Input("ws", {}).Input("wz", {}, w_elem);
  b.Input("ys", {}).Input("yz", {}, TensorProto::UINT8);
  b.Node("QLinearConv", "q", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  b.Output("y", {}, TensorProto::UINT8);
  return b;
}

TEST(OnnxValidator, QLinearConvWeightIsItsFourthInput) {
  // libonnx's conv inference read past the 1-D input's dims (SIGSEGV) before the rank check
  // looked at the weight where QLinearConv has it.
  EXPECT_ERROR_HAS(QLinearConvOf({1, 3, 8}, {4, 3, 3, 3}),
                   "node 'q' (QLinearConv): weight 'w' must have the rank of input 'x' (3), got 4");
}

TEST(OnnxValidator, AKernelLargerThanThePaddedInputIsRefused) {
  // The int8 conv planners divided by the empty output's size (SIGFPE).
  EXPECT_ERROR_HAS(QLinearConvOf({1, 3, 2, 2}, {4, 3, 3, 3}),
                   "node 'q' (QLinearConv): weight 'w' [4,3,3,3] with dilations [1,1] spans more "
                   "than input 'x' [1,3,2,2] padded by [0,0,0,0]: the output would be empty");
  EXPECT_ERROR_HAS(ConvWith("dilations", {2, 2}), "node 'c' (Conv): weight 'w' [1,1,3,3]");
  OnnxBuilder padded;
  padded.Input("x", {1, 1, 2, 2}).FloatInit("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  OnnxBuilder::IntsAttr(padded.Node("Conv", "c", {"x", "w"}, {"y"}), "pads", {1, 1, 1, 1});
  padded.Output("y", {1, 1, 2, 2});
  EXPECT_EQ(ImportError(padded), "");
}

TEST(OnnxValidator, KernelShapeMustBeTheWeights) {
  EXPECT_ERROR_HAS(ConvWith("kernel_shape", {5, 5}),
                   "node 'c' (Conv): attribute 'kernel_shape' [5,5] must be the spatial shape of "
                   "weight 'w' [1,1,3,3]");
}

TEST(OnnxValidator, PoolPadsMustBeSmallerThanTheKernel) {
  // As ONNX Runtime refuses them: a window wholly in the padding has no element to take.
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4});
  OnnxBuilder::IntsAttr(b.Node("AveragePool", "a", {"x"}, {"y"}), "kernel_shape", {2, 2});
  b.Output("y", {1, 1, 3, 3});
  EXPECT_EQ(ImportError(b), "");
  OnnxBuilder::IntsAttr(b.model().mutable_graph()->mutable_node(0), "pads", {0, 2, 0, 0});
  EXPECT_ERROR_HAS(b,
                   "node 'a' (AveragePool): attribute 'pads' [0,2,0,0] must be smaller than "
                   "'kernel_shape' [2,2] on each axis");
}

TEST(OnnxValidator, GlobalPoolsNeedASpatialAxis) {
  OnnxBuilder b;
  b.Input("x", {3});
  b.Node("GlobalMaxPool", "g", {"x"}, {"y"});
  b.Output("y", {});
  EXPECT_ERROR_HAS(b, "node 'g' (GlobalMaxPool): input 'x' must have rank >= 3");
}

TEST(OnnxValidator, OperandTypesFollowTheSchema) {
  EXPECT_ERROR_HAS(QLinearConvOf({1, 3, 8, 8}, {4, 3, 3, 3}, onnx::TensorProto::INT32),
                   "node 'q' (QLinearConv): input 'w' (w) must be tensor(int8) or tensor(uint8), "
                   "got tensor(int32)");
  // Past libonnx's opsets only the bindings are checked (opset 21 widens the type sets).
  for (int64_t opset : {13, 21}) {
    OnnxBuilder b(opset);
    b.Input("x", {4}, onnx::TensorProto::UINT8)
        .Input("s", {})
        .Input("z", {}, onnx::TensorProto::INT8);
    b.Node("DequantizeLinear", "dq", {"x", "s", "z"}, {"y"});
    b.Output("y", {});
    EXPECT_ERROR_HAS(b,
                     "node 'dq' (DequantizeLinear): input 'z' (x_zero_point) must have the type "
                     "of input 'x', tensor(uint8), got tensor(int8)");
  }
}

TEST(OnnxValidator, OnnxRuntimeQuantizedOpsAreCheckedWithoutASchema) {
  using onnx::TensorProto;
  auto sigmoid = [](int32_t x_elem, const std::vector<int64_t>& scale_shape, int inputs) {
    OnnxBuilder b;
    auto* ms = b.model().add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    b.Input("x", {4}, x_elem).Input("xs", scale_shape).Input("xz", {}, TensorProto::UINT8);
    b.Input("ys", {}).Input("yz", {}, TensorProto::UINT8);
    std::vector<std::string> in = {"x", "xs", "xz", "ys", "yz"};
    in.resize(static_cast<size_t>(inputs));
    b.Node("QLinearSigmoid", "s", in, {"y"})->set_domain("com.microsoft");
    b.Output("y", {4}, TensorProto::UINT8);
    return b;
  };
  EXPECT_EQ(ImportError(sigmoid(TensorProto::UINT8, {}, 5)), "");
  EXPECT_ERROR_HAS(sigmoid(TensorProto::UINT8, {}, 3),
                   "node 's' (QLinearSigmoid): QLinearSigmoid takes 4 to 5 inputs (X, X_scale, "
                   "X_zero_point?, Y_scale, Y_zero_point?) and one output, got 3 and 1");
  EXPECT_ERROR_HAS(sigmoid(TensorProto::FLOAT, {}, 5),
                   "input 'x' (X) must be int8 or uint8, got float");
  EXPECT_ERROR_HAS(sigmoid(TensorProto::INT8, {}, 5),
                   "input 'xz' (X_zero_point) must have the type of input 'x', int8, got uint8");
  EXPECT_ERROR_HAS(sigmoid(TensorProto::UINT8, {4}, 5),
                   "input 'xs' (X_scale) must be a scalar, got shape [4]");
}

TEST(OnnxValidator, EnumeratedStringsAndFmodFollowTheSpec) {
  OnnxBuilder shift;
  shift.Input("x", {4}, onnx::TensorProto::UINT32).Input("s", {4}, onnx::TensorProto::UINT32);
  OnnxBuilder::StringAttr(shift.Node("BitShift", "b", {"x", "s"}, {"y"}), "direction", "SIDEWAYS");
  shift.Output("y", {4}, onnx::TensorProto::UINT32);
  EXPECT_ERROR_HAS(shift,
                   "node 'b' (BitShift): attribute 'direction' must be one of LEFT, RIGHT, "
                   "got 'SIDEWAYS'");
  OnnxBuilder mod;
  mod.Input("x", {4}).Input("d", {4});
  mod.Node("Mod", "m", {"x", "d"}, {"y"});
  mod.Output("y", {4});
  EXPECT_ERROR_HAS(mod, "node 'm' (Mod): attribute 'fmod' must be 1 for float inputs, got 0");
}

TEST(OnnxValidator, PerChannelOperandsHoldOneValuePerChannel) {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8}, onnx::TensorProto::UINT8);
  b.Input("w", {4, 3, 3, 3}, onnx::TensorProto::INT8);
  b.Input("xz", {}, onnx::TensorProto::UINT8).Input("wz", {7}, onnx::TensorProto::INT8);
  b.Node("ConvInteger", "ci", {"x", "w", "xz", "wz"}, {"y"});
  b.Output("y", {1, 4, 6, 6}, onnx::TensorProto::INT32);
  EXPECT_ERROR_HAS(b,
                   "node 'ci' (ConvInteger): 'wz' int8[7] must hold 4 values, one per index of "
                   "axis 0 of the weight [4,3,3,3]");
}

TEST(OnnxValidator, GraphsWithoutNodesOrOutputsAreRefused) {
  OnnxBuilder empty;
  empty.Input("x", {2});
  empty.Output("x", {2});
  EXPECT_ERROR_HAS(empty, "m.onnx: the graph has no nodes");

  OnnxBuilder undefined_output(1);  // found by fuzz_onnx_import: a SIGSEGV in the converter
  undefined_output.Input("x", {2});
  undefined_output.Node("Relu", "r", {"x"}, {"y"});
  undefined_output.Output("Y", {2});
  EXPECT_ERROR_HAS(undefined_output,
                   "m.onnx: graph output 'Y' is not produced by any node, nor is it an input");

  OnnxBuilder no_outputs;
  no_outputs.Input("x", {2});
  no_outputs.Node("Relu", "r", {"x"}, {"y"});
  EXPECT_ERROR_HAS(no_outputs, "m.onnx: the graph declares no outputs");
}

}  // namespace
}  // namespace compiler
}  // namespace ember
