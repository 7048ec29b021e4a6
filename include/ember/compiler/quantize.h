/*!
 * \file ember/compiler/quantize.h
 * \brief Post-training static quantization: a float32 ONNX model and calibration samples in, a
 *        standard QDQ model out (`emberc quantize`, Python `ember.quantize`).
 *
 * What is written (README, "int8: quantizing a model"): uint8 activations per tensor
 * (asymmetric, 0 exactly representable), int8 weights symmetric per output channel (or per
 * tensor), int32 biases at x_scale * w_scale with zero point 0, for Conv, MatMul and Gemm with
 * constant weights, laid out as compiler/transform/fuse_qdq.cc fuses them into QLinearConv /
 * QLinearMatMul. Ranges come from running the float model on the samples with Ember itself.
 */
#ifndef EMBER_COMPILER_QUANTIZE_H_
#define EMBER_COMPILER_QUANTIZE_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief uint8 activations: the full range. */
constexpr int32_t kActivationQMin = 0;
constexpr int32_t kActivationQMax = 255;
/*! \brief int8 weights are symmetric in [-kWeightQMax, kWeightQMax]: 7 bits of magnitude (63),
 *  because ORT's AVX2 u8 x s8 kernel adds pairs of products in int16 with saturation, which is
 *  exact only when |w| <= 63 (2 * 255 * 63 < 2^15); see tests/models/gen_exported.py's qdq(). */
constexpr int32_t kWeightQMax = 63;
static_assert(2 * kActivationQMax * kWeightQMax < 32768, "u8 x s8 pair sums must fit int16");
/*! \brief Bins of the percentile method's histogram, over each tensor's observed [min, max]. */
constexpr int kPercentileBins = 2048;

/*! \brief Scale and zero point of one quantized tensor (or channel). */
struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

/*! \brief Rounds half to even, as ONNX's QuantizeLinear does. */
double RoundHalfToEven(double x);

/*! \brief uint8 asymmetric parameters for the range [lo, hi], widened to hold 0 so that 0 is
 *  exactly representable (the zero point is an integer in [0, 255]); an empty range gives
 *  scale 1, zero point 0. */
QuantParams ActivationQuantParams(float lo, float hi);

/*! \brief int8 symmetric parameters (zero point 0) for weights of magnitude up to \p max_abs. */
QuantParams SymmetricWeightQuantParams(float max_abs);

/*! \brief clamp(round_half_even(x / scale) + zero_point, qmin, qmax). */
int32_t QuantizeValue(float x, const QuantParams& q, int32_t qmin, int32_t qmax);

/*! \brief Calibration method: running min/max, or a histogram clipped at a percentile. */
enum class CalibrationMethod { kMinMax, kPercentile };

struct QuantizeOptions {
  std::string model_path;
  std::string output_path;
  /*! \brief A directory of .npy samples (README: DIR/NNN/INPUT.npy, or DIR/NAME.npy for a
   *  one-input model, each file one sample or a leading batch of samples). */
  std::string calibration_dir;
  CalibrationMethod method = CalibrationMethod::kMinMax;
  /*! \brief For kPercentile: each tail is clipped at this percentile of the tensor's values. */
  double percentile = 99.99;
  /*! \brief One scale per tensor instead of per output channel. */
  bool per_tensor_weights = false;
  /*! \brief Node names kept float (no QDQ around their inputs and weights). */
  std::vector<std::string> exclude;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /*! \brief --report: FILE.tsv or FILE.json; "" writes none. */
  std::string report_path;
  /*! \brief Progress while calibrating; only shown when it is a terminal (stderr). */
  std::ostream* log = nullptr;
  /*! \brief Ember's compiles of the calibration models (default: one per hardware thread). */
  int jobs = 0;
};

/*! \brief One quantized layer's error against fp32, over every calibration sample. */
struct LayerError {
  std::string node;
  std::string op;
  std::string tensor;         // the float tensor compared (the layer's output, after a fused Relu)
  double sqnr_db = 0;         // 10 log10(sum ref^2 / sum (q - ref)^2); +inf when exact
  double max_abs = 0;         // max |q - ref|
  double range = 0;           // max ref - min ref
  bool model_output = false;  // a graph output row rather than a layer
  /*! \brief max_abs / range (0 when the range is empty). */
  double RelativeMaxError() const { return range > 0 ? max_abs / range : 0; }
};

struct QuantizeResult {
  std::vector<LayerError> layers;  // quantized layers in graph order, then the model's outputs
  int samples = 0;
  int quantized_nodes = 0;
  int excluded_nodes = 0;
  /*! \brief A text table: node, op, SQNR dB, max |err| / range. */
  std::string Table() const;
  std::string Tsv() const;
  std::string Json() const;
};

/*! \brief Quantizes options.model_path into options.output_path (and the report file).
 *  Throws CompileError with one line naming the file, input, node or option on every refusal. */
QuantizeResult Quantize(const QuantizeOptions& options);

/*! \brief Parses `emberc quantize`'s arguments (after the word "quantize"); the Python package
 *  passes the same list. Throws CompileError naming the argument. */
QuantizeOptions ParseQuantizeArgs(const std::vector<std::string>& args);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_QUANTIZE_H_
