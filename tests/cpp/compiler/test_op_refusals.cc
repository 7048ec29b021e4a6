// Malformed nodes of the indexing, scan, selection, scatter, Einsum, window, spectral,
// normalization and loss ops are refused at import with a message naming the node and what is
// wrong, never a crash, a hang or a huge allocation (the ASan/UBSan stage runs these too).
#include <ember/compiler/frontend.h>
#include <gtest/gtest.h>

#include <functional>

#include "onnx_builder.h"

namespace ember {
namespace compiler {
namespace {

using testing::OnnxBuilder;
using Build = std::function<void(OnnxBuilder&)>;

std::string ErrorOf(int64_t opset, const Build& build) {
  OnnxBuilder b(opset);
  b.model().set_ir_version(8);
  build(b);
  try {
    ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  } catch (const CompileError& e) {
    return e.what();
  }
  return "(imported)";
}

struct Refusal {
  const char* what;
  int64_t opset;
  Build build;
  const char* message;
};

// x [3, 4] and a rank-2 output y of unknown size, around one node.
Build Around(const char* op, std::vector<std::string> inputs,
             std::function<void(onnx::NodeProto*)> attrs = nullptr) {
  return [=](OnnxBuilder& b) {
    b.Input("x", {3, 4}).Output("y", {-1, -1});
    onnx::NodeProto* n = b.Node(op, "n", inputs, {"y"});
    if (attrs) attrs(n);
  };
}

const std::vector<Refusal>& Refusals() {
  using B = OnnxBuilder;
  static const std::vector<Refusal> rows = {
      {"Reshape to a negative size", 13,
       [](B& b) {
         b.IntInit("shape", {2}, {-5, 4});
         Around("Reshape", {"x", "shape"})(b);
       },
       "shape entry 0 is -5: expected a size, 0 (copy) or -1 (infer), in [-5,4]"},
      {"Reshape to sizes whose product passes int64", 13,
       [](B& b) {
         b.IntInit("shape", {3}, {int64_t{1} << 40, int64_t{1} << 40, -1});
         Around("Reshape", {"x", "shape"})(b);
       },
       "its sizes multiply past int64"},
      {"GatherND batch_dims past the ranks", 13,
       [](B& b) {
         b.IntInit("at", {1, 2}, {0, 1});
         Around("GatherND", {"x", "at"}, [](auto* n) { B::IntAttr(n, "batch_dims", 5); })(b);
       },
       "batch_dims 5 must be below the ranks of data float32[3,4] and indices int64[1,2]"},
      {"GatherND tuples longer than the rank", 13,
       [](B& b) {
         b.IntInit("at", {1, 3}, {0, 1, 2});
         Around("GatherND", {"x", "at"})(b);
       },
       "must end in tuples of 1..2 indices"},
      {"GatherElements indices wider than the data", 13,
       [](B& b) {
         b.IntInit("at", {2, 9}, std::vector<int64_t>(18, 0));
         Around("GatherElements", {"x", "at"})(b);
       },
       "no larger extent off axis 0"},
      {"ScatterElements constant index out of range", 13,
       [](B& b) {
         b.IntInit("at", {1, 2}, {0, 9}).Input("u", {1, 2});
         Around("ScatterElements", {"x", "at", "u"})(b);
       },
       "index 9 (element 1 of indices 'at') is out of range for axis 0 of size 3; valid: -3..2"},
      {"ScatterElements unknown reduction", 18,
       [](B& b) {
         b.IntInit("at", {1, 2}, {0, 1}).Input("u", {1, 2});
         Around("ScatterElements", {"x", "at", "u"},
                [](auto* n) { B::StringAttr(n, "reduction", "xor"); })(b);
       },
       "reduction 'xor' (supported: none, add, mul, max, min)"},
      {"ScatterND updates of the wrong shape", 13,
       [](B& b) {
         b.IntInit("at", {1, 1}, {0}).Input("u", {1, 3});
         Around("ScatterND", {"x", "at", "u"})(b);
       },
       "updates must be float32[1,4], got float32[1,3]"},
      {"TopK k past the axis", 13,
       [](B& b) {
         b.IntInit("k", {1}, {99}).Output("i", {-1, -1}, onnx::TensorProto::INT64);
         b.Input("x", {3, 4}).Output("y", {-1, -1});
         b.Node("TopK", "n", {"x", "k"}, {"y", "i"});
       },
       "k must be 1..4 (the size of axis 1 of float32[3,4]), got 99"},
      {"TopK k at run time", 13,
       [](B& b) {
         b.Input("k", {1}, onnx::TensorProto::INT64)
             .Output("i", {-1, -1}, onnx::TensorProto::INT64);
         b.Input("x", {3, 4}).Output("y", {-1, -1});
         b.Node("TopK", "n", {"x", "k"}, {"y", "i"});
       },
       "input 1 ('K', value 'k') must be a constant"},
      {"CumSum axis of two values", 13,
       [](B& b) {
         b.IntInit("axis", {2}, {0, 1});
         Around("CumSum", {"x", "axis"})(b);
       },
       "input 1 ('axis') must hold one value, got int64[2]"},
      {"CumProd axis past the rank", 26,
       [](B& b) {
         b.IntInit("axis", {}, {2});
         Around("CumProd", {"x", "axis"})(b);
       },
       "axis 2 is out of range for rank 2; valid: -2..1"},
      {"BitCast to a narrower type", 26,
       Around("BitCast", {"x"}, [](auto* n) { B::IntAttr(n, "to", onnx::TensorProto::FLOAT16); }),
       "attribute 'to' must name a type as wide as the input's float32 (32 bits), got float16 (16 "
       "bits)"},
      {"BitCast to a type ONNX lacks", 26,
       Around("BitCast", {"x"}, [](auto* n) { B::IntAttr(n, "to", 99); }), "attribute 'to'"},
      {"TensorScatter on the batch axis", 24,
       [](B& b) {
         b.Input("u", {1, 4});
         Around("TensorScatter", {"x", "u"}, [](auto* n) { B::IntAttr(n, "axis", 0); })(b);
       },
       "axis must not be 0, the batch axis"},
      {"TensorScatter update longer than the cache", 24,
       [](B& b) {
         b.Input("u", {3, 5});
         Around("TensorScatter", {"x", "u"}, [](auto* n) { B::IntAttr(n, "axis", 1); })(b);
       },
       "update must have past_cache's shape float32[3,4] but along axis 1 (at most 4), got "
       "float32[3,5]"},
      {"TensorScatter write_indices not one per batch", 24,
       [](B& b) {
         b.Input("u", {3, 2}).Input("w", {2}, onnx::TensorProto::INT64);
         Around("TensorScatter", {"x", "u", "w"}, [](auto* n) { B::IntAttr(n, "axis", -1); })(b);
       },
       "write_indices must be int64[3] (one per batch), got int64[2]"},
      {"TensorScatter mode unknown", 24,
       [](B& b) {
         b.Input("u", {3, 2});
         Around("TensorScatter", {"x", "u"}, [](auto* n) { B::StringAttr(n, "mode", "ring"); })(b);
       },
       "mode 'ring' (valid: linear, circular)"},
      {"CenterCropPad with a size per axis missing", 18,
       [](B& b) {
         b.IntInit("size", {1}, {2});
         Around("CenterCropPad", {"x", "size"})(b);
       },
       "shape must hold one size per axis (2), got 1"},
      {"CenterCropPad on a repeated axis", 18,
       [](B& b) {
         b.IntInit("size", {2}, {2, 2});
         Around("CenterCropPad", {"x", "size"}, [](auto* n) {
           B::IntsAttr(n, "axes", {1, -1});
         })(b);
       },
       "axis 1 is repeated"},
      {"Col2Im block larger than the image", 18,
       [](B& b) {
         b.Input("c", {1, 4, 1}).IntInit("image", {1}, {3}).IntInit("block", {1}, {4});
         b.Output("y", {-1, -1, -1});
         b.Node("Col2Im", "n", {"c", "image", "block"}, {"y"});
       },
       "block_shape [4] (dilations [1]) must fit image_shape [3] padded by [0,0]"},
      {"Col2Im columns the blocks do not make", 18,
       [](B& b) {
         b.Input("c", {1, 4, 3}).IntInit("image", {1}, {5}).IntInit("block", {1}, {4});
         b.Output("y", {-1, -1, -1});
         b.Node("Col2Im", "n", {"c", "image", "block"}, {"y"});
       },
       "input float32[1,4,3] must be [N, C * 4, 2]"},
      {"AffineGrid theta of the wrong size", 20,
       [](B& b) {
         b.Input("t", {2, 3, 3}).IntInit("size", {4}, {2, 1, 5, 5}).Output("y", {-1, -1, -1, -1});
         b.Node("AffineGrid", "n", {"t", "size"}, {"y"});
       },
       "theta must be float (N, 2, 3) for a size (N, C, H, W) or (N, 3, 4) for (N, C, D, H, W), "
       "got theta float32[2,3,3] and size [2,1,5,5]"},
      {"Det of a matrix that is not square", 11, Around("Det", {"x"}),
       "expected float square matrices [..., M, M], got float32[3,4]"},
      {"RoiAlign mode unknown", 16,
       [](B& b) {
         b.Input("m", {1, 2, 8, 8}).Input("r", {3, 4}).Input("i", {3}, onnx::TensorProto::INT64);
         b.Output("y", {-1, -1, -1, -1});
         B::StringAttr(b.Node("RoiAlign", "n", {"m", "r", "i"}, {"y"}), "mode", "min");
       },
       "mode 'min' (valid: avg, max)"},
      {"RoiAlign boxes of five coordinates", 16,
       [](B& b) {
         b.Input("m", {1, 2, 8, 8}).Input("r", {3, 5}).Input("i", {3}, onnx::TensorProto::INT64);
         b.Output("y", {-1, -1, -1, -1});
         B::IntAttr(b.Node("RoiAlign", "n", {"m", "r", "i"}, {"y"}), "sampling_ratio", 2);
       },
       "expected float X [N, C, H, W], rois [R, 4] of its type and int64 batch_indices [R], got "
       "float32[1,2,8,8], float32[3,5] and int64[3]"},
      {"DeformConv offsets for another kernel", 19,
       [](B& b) {
         b.Input("m", {1, 2, 5, 5})
             .Input("off", {1, 8, 3, 3})
             .FloatInit("w", {4, 2, 3, 3}, std::vector<float>(72, 1.f));
         b.Output("y", {-1, -1, -1, -1});
         b.Node("DeformConv", "n", {"m", "w", "off"}, {"y"});
       },
       "offset must be float32[1,18,3,3], got float32[1,8,3,3]"},
      {"OneHot depth of a trillion", 13,
       [](B& b) {
         b.Input("i", {3}, onnx::TensorProto::INT64).Output("y", {-1, -1});
         b.IntInit("depth", {}, {1000000000000}).FloatInit("v", {2}, {0, 1});
         b.Node("OneHot", "n", {"i", "depth", "v"}, {"y"});
       },
       "depth must be 1..16777216, got 1e+12"},
      {"Trilu of a vector", 14,
       [](B& b) {
         b.Input("v", {3}).Output("y", {-1});
         b.Node("Trilu", "n", {"v"}, {"y"});
       },
       "expected rank >= 2, got float32[3]"},
      {"Einsum label not in any input", 13,
       Around("Einsum", {"x", "x"}, [](auto* n) { B::StringAttr(n, "equation", "ij,jk->iq"); }),
       "output label 'q' is in no input term"},
      {"Einsum diagonal of a matrix that is not square", 13,
       [](B& b) {
         b.Input("m", {3, 4}).Output("y", {-1});
         B::StringAttr(b.Node("Einsum", "n", {"m"}, {"y"}), "equation", "ii->i");
       },
       "label 'i' has sizes 3 and 4 within one term"},
      {"Einsum sizes that differ", 13,
       Around("Einsum", {"x", "x"}, [](auto* n) { B::StringAttr(n, "equation", "ij,jk->ik"); }),
       "label 'j' has size 4 in one term and 3 in another"},
      {"HannWindow of ten billion", 17,
       [](B& b) {
         b.IntInit("size", {}, {10000000000}).Output("y", {-1});
         b.Node("HannWindow", "n", {"size"}, {"y"});
       },
       "size must be 1..16777216, got 10000000000"},
      {"GridSample unknown padding", 16,
       [](B& b) {
         b.Input("img", {1, 2, 4, 4}).Input("g", {1, 3, 3, 2}).Output("y", {-1, -1, -1, -1});
         B::StringAttr(b.Node("GridSample", "n", {"img", "g"}, {"y"}), "padding_mode", "wrap");
       },
       "padding_mode 'wrap' (supported: zeros, border, reflection)"},
      {"DFT over the batch axis", 17,
       [](B& b) {
         b.Input("s", {2, 8, 1}).Output("y", {-1, -1, -1});
         B::IntAttr(b.Node("DFT", "n", {"s"}, {"y"}), "axis", 0);
       },
       "axis must be a signal axis (1..1), got 0"},
      {"STFT frames longer than the signal", 17,
       [](B& b) {
         b.Input("s", {1, 16, 1}).IntInit("step", {}, {4}).IntInit("len", {}, {32});
         b.Output("y", {-1, -1, -1, -1});
         b.Node("STFT", "n", {"s", "step", "", "len"}, {"y"});
       },
       "frame_step must be positive and frame_length 1..16 (the signal's length), got 4 and 32"},
      {"LpNormalization p 3", 13,
       Around("LpNormalization", {"x"}, [](auto* n) { B::IntAttr(n, "p", 3); }),
       "attribute 'p' must be 1 or 2, got 3"},
      {"Split of a scalar", 13,  // its default axis 0 indexed an empty shape (SIGSEGV)
       [](B& b) {
         b.Input("s", {}).Output("y", {});
         b.Node("Split", "n", {"s"}, {"y"});
       },
       "axis 0 is out of range for rank 0 (a scalar has no axes)"},
      {"ConvInteger of an empty weight", 13,  // its expansion divided by W's 0 channels
       [](B& b) {
         b.Input("x4", {1, 1, 3, 3}, onnx::TensorProto::UINT8)
             .Input("w", {1, 0, 2, 2}, onnx::TensorProto::UINT8)
             .Output("y", {-1, -1, -1, -1}, onnx::TensorProto::INT32);
         b.Node("ConvInteger", "n", {"x4", "w"}, {"y"});
       },
       "W uint8[1,0,2,2] is empty"},
      {"Conv with 5 biases for 8 channels", 13,  // read past B's end
       [](B& b) {
         b.Input("x4", {1, 4, 6, 6}).Input("w", {8, 4, 3, 3}).Input("b5", {5});
         b.Output("y", {-1, -1, -1, -1});
         b.Node("Conv", "n", {"x4", "w", "b5"}, {"y"});
       },
       "node 'n' (Conv): B float32[5] must hold 8 values, one per output channel"},
      {"ConvTranspose with a [2,8] bias", 13,  // "te: tensor b has 2 dims", naming nothing
       [](B& b) {
         b.Input("x4", {1, 4, 6, 6}).Input("w", {4, 4, 3, 3}).Input("b28", {2, 8});
         b.Output("y", {-1, -1, -1, -1});
         OnnxBuilder::IntAttr(b.Node("ConvTranspose", "n", {"x4", "w", "b28"}, {"y"}), "group", 2);
       },
       "node 'n' (ConvTranspose): B float32[2,8] must hold 8 values, one per output channel"},
      {"ConvTranspose of 2^20 channels with a weight for 16", 13,  // ran for minutes (sweep)
       [](B& b) {
         b.Input("x4", {1, 1 << 20, 2, 2}).Input("w", {16, 8, 4, 4});
         b.Output("y", {-1, -1, -1, -1});
         b.Node("ConvTranspose", "n", {"x4", "w"}, {"y"});
       },
       "input channels 1048576 != W's first dim 16 (W float32[16,8,4,4])"},
      {"ConvTranspose channels that do not split into the groups", 13,
       [](B& b) {
         b.Input("x4", {1, 3, 2, 2}).Input("w", {3, 2, 2, 2});
         b.Output("y", {-1, -1, -1, -1});
         OnnxBuilder::IntAttr(b.Node("ConvTranspose", "n", {"x4", "w"}, {"y"}), "group", 2);
       },
       "input channels 3 do not split into group 2"},
      // Scalar operands read as element 0: an empty one was read past its end, a longer one
      // broadcast silently (Clip) or lost its other values.
      {"Clip with three minimums", 13,
       [](B& b) {
         b.FloatInit("lo", {3}, {0, 0, 0});
         Around("Clip", {"x", "lo"})(b);
       },
       "node 'n' (Clip): input min must hold one value, got float32[3]"},
      {"Clip with a run-time maximum of 4 values", 13,
       [](B& b) {
         b.Input("hi", {4});
         Around("Clip", {"x", "", "hi"})(b);
       },
       "input max must hold one value, got float32[4]"},
      {"Range of an empty start", 13,
       [](B& b) {
         b.IntInit("s", {0}, {}).IntInit("l", {}, {5}).IntInit("d", {}, {1});
         b.Output("y", {-1}, onnx::TensorProto::INT64);
         b.Node("Range", "n", {"s", "l", "d"}, {"y"});
       },
       "input 0 ('start') must hold one value, got int64[0]"},
      // The kernels read per-channel parameters at the channel's index: 4 channels against 3
      // values read past them (the mutation sweep's 2^20 channels crashed ember-run).
      {"BatchNormalization with 3 scales for 4 channels", 13,
       [](B& b) {
         b.Input("p", {3}).Input("q", {4});
         Around("BatchNormalization", {"x", "p", "q", "q", "q"})(b);
       },
       "input scale must have shape [4] (one value per channel of X float32[3,4]), got "
       "float32[3]"},
      // Its expansion held a reference to X's type across the nodes it emitted, which grew
      // the graph's values under it (use-after-free; ASan, mutation sweep): values are now kept
      // where adding one moves none.
      {"training-mode BatchNormalization with an empty running mean", 15,
       [](B& b) {
         b.Input("xb", {2, 4, 3}).Input("q", {4}).Input("m0", {0});
         b.Output("y", {-1, -1, -1}).Output("rm", {-1}).Output("rv", {-1});
         OnnxBuilder::IntAttr(
             b.Node("BatchNormalization", "n", {"xb", "q", "q", "m0", "q"}, {"y", "rm", "rv"}),
             "training_mode", 1);
       },
       "input input_mean must have shape [4] (one value per channel of X float32[2,4,3]), got "
       "float32[0]"},
      {"InstanceNormalization with a [4,1] bias", 13,
       [](B& b) {
         b.Input("x3", {1, 4, 5}).Input("s", {4}).Input("bias", {4, 1}).Output("y", {-1, -1, -1});
         b.Node("InstanceNormalization", "n", {"x3", "s", "bias"}, {"y"});
       },
       "input B must have shape [4] (one value per channel of X float32[1,4,5]), got "
       "float32[4,1]"},
      {"LayerNormalization scale of another size", 17,
       [](B& b) {
         b.Input("s", {5});
         Around("LayerNormalization", {"x", "s"})(b);
       },
       "Scale float32[5] does not broadcast to the normalized shape of X float32[3,4] from axis 1"},
      {"Resize keeping the aspect ratio of an empty axis", 18,
       [](B& b) {
         b.Input("x0", {1, 1, 0, 4}).IntInit("sizes", {2}, {4, 4}).Output("y", {-1, -1, -1, -1});
         onnx::NodeProto* n = b.Node("Resize", "n", {"x0", "", "", "sizes"}, {"y"});
         B::IntsAttr(n, "axes", {2, 3});
         B::StringAttr(n, "keep_aspect_ratio_policy", "not_smaller");
       },
       "keep_aspect_ratio_policy 'not_smaller' needs the input's extent along axis 2 to be > 0, "
       "got [1,1,0,4]"},
      {"NegativeLogLikelihoodLoss target of another batch", 13,
       [](B& b) {
         b.Input("x", {3, 4}).Input("t", {2}, onnx::TensorProto::INT64).Output("y", {});
         b.Node("NegativeLogLikelihoodLoss", "n", {"x", "t"}, {"y"});
       },
       "input 'target' must be an integer tensor of shape [3] (the input's without C), got "
       "int64[2]"},
      {"NegativeLogLikelihoodLoss weight of another class count", 13,
       [](B& b) {
         b.Input("x", {3, 4}).Input("t", {3}, onnx::TensorProto::INT64).Input("w", {5});
         b.Output("y", {});
         b.Node("NegativeLogLikelihoodLoss", "n", {"x", "t", "w"}, {"y"});
       },
       "input 'weight' must be float32[4] (one weight per class), got float32[5]"},
      {"SoftmaxCrossEntropyLoss unknown reduction", 13,
       [](B& b) {
         b.Input("x", {3, 4}).Input("t", {3}, onnx::TensorProto::INT64).Output("y", {});
         B::StringAttr(b.Node("SoftmaxCrossEntropyLoss", "n", {"x", "t"}, {"y"}), "reduction",
                       "max");
       },
       "reduction 'max' (supported: none, sum, mean)"},
      {"SoftmaxCrossEntropyLoss scores without classes", 13,
       [](B& b) {
         b.Input("x1", {4}).Input("t0", {}, onnx::TensorProto::INT64).Output("y", {});
         b.Node("SoftmaxCrossEntropyLoss", "n", {"x1", "t0"}, {"y"});
       },
       "input 'scores' must be [N, C, d1..dk], got float32[4]"},
  };
  return rows;
}

TEST(OpRefusals, EachMalformedNodeIsRefusedNamingTheNodeAndTheProblem) {
  for (const Refusal& r : Refusals()) {
    const std::string err = ErrorOf(r.opset, r.build);
    EXPECT_NE(err.find("node 'n'"), std::string::npos) << r.what << ": " << err;
    EXPECT_NE(err.find(r.message), std::string::npos) << r.what << ": " << err;
  }
}

}  // namespace
}  // namespace compiler
}  // namespace ember
