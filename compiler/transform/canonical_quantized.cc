// Canonical forms of the ONNX quantization ops (registered as their canonicalization rules):
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear become float arithmetic with ONNX's
// rounding (half to even) and saturation; ConvInteger, MatMulInteger, QLinearConv and
// QLinearMatMul become an int32 Conv / MatMul on zero-point-shifted operands (exact, as ONNX
// Runtime's integer kernels are), then, for the QLinear forms, requantization by the float
// multiplier x_scale * w_scale / y_scale. Constant operands (weights, their scales) fold here, so
// a weight's dequantization costs nothing at run time.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// The quantizers' expansions: per-axis and blocked parameters, rounding and saturation.
class Expander : public OnnxExpander {
 public:
  using OnnxExpander::OnnxExpander;

  /*! \brief A per-axis parameter (1-D, one entry per index of `axis` of a tensor of shape
   * `along`) shaped to broadcast along that axis; a scalar or one-element one as it is; with the
   * node's block_size (opset 21), one entry per block of `axis`, repeated over its block. */
  int AlongAxis(int param, int64_t axis, const std::vector<int64_t>& along) {
    const TensorType t = TypeOf(param);
    const int64_t rank = static_cast<int64_t>(along.size());
    const int64_t block = node_.GetInt("block_size", 0);
    if (block < 0) NodeError(node_, "block_size must be >= 0, got " + std::to_string(block));
    if (block > 0) return PerBlock(param, NormalizeAxis(node_, axis, rank, "axis"), along, block);
    if (t.NumElements() == 1 || rank == 0) return param;
    if (t.ndim() != 1) {
      NodeError(node_, "a per-axis scale or zero point must be 1-D, got " + t.ToString());
    }
    axis = NormalizeAxis(node_, axis, rank, "axis");
    RequireOnePerIndex(param, along[static_cast<size_t>(axis)],
                       "axis " + std::to_string(axis) + " of " + ShapeToString(along));
    std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
    shape[static_cast<size_t>(axis)] = t.shape[0];
    return Op("Reshape", {param, ctx_->Constant(node_.name + "_shape", MakeInt64Tensor(shape))});
  }
  /*! \brief A blocked parameter (x's shape, but ceil(extent / block) along `axis`) gathered to x's
   * shape: entry i of the axis reads entry i / block. */
  int PerBlock(int param, int64_t axis, const std::vector<int64_t>& along, int64_t block) {
    const TensorType t = TypeOf(param);
    std::vector<int64_t> want = along;
    const int64_t extent = along[static_cast<size_t>(axis)];
    want[static_cast<size_t>(axis)] = (extent + block - 1) / block;
    if (t.shape != want) {
      NodeError(node_, "with block_size " + std::to_string(block) + " along axis " +
                           std::to_string(axis) + " of " + ShapeToString(along) +
                           ", a scale or zero point must have shape " + ShapeToString(want) +
                           ", got " + t.ToString());
    }
    std::vector<int64_t> index(static_cast<size_t>(extent));
    for (int64_t i = 0; i < extent; ++i) index[static_cast<size_t>(i)] = i / block;
    return Op("Gather", {param, ctx_->Constant(node_.name + "_blocks", MakeInt64Tensor(index))},
              {{"axis", axis}});
  }
  /*! \brief A scale in float32, the type the quantizers compute in (float16 scales widened). */
  int Float32Scale(int scale) {
    return TypeOf(scale).dtype == kFloat32 ? scale : Cast(scale, kFloat32);
  }
  /*! \brief Refuses a per-axis scale, zero point or bias that is not one value per index of the
   * axis it runs along (`extent` indices, described by `axis`), before anything indexes it. */
  void RequireOnePerIndex(int param, int64_t extent, const std::string& axis) {
    const TensorType& t = TypeOf(param);
    if (t.ndim() != 1 || t.shape[0] != extent) {
      NodeError(node_, "'" + ctx_->graph().value(param).name + "' " + t.ToString() + " must hold " +
                           std::to_string(extent) + " values, one per index of " + axis);
    }
  }

  /*! \brief round_half_even(x / scale) + zero_point, saturated to `to` (float in, float out);
   * scale kAbsentValue: x is already scaled (no division by a 1 the kernels would load and
   * divide by per element). */
  int QuantizeFloat(int x, int scale, int zero_point, DLDataType to) {
    int q = Op("Round", {scale == kAbsentValue ? x : Op("Div", {x, Float32Scale(scale)})});
    if (zero_point != kAbsentValue) q = Op("Add", {q, Cast(zero_point, kFloat32)});
    const bool is_signed = to.code == kDLInt;
    const double lo = is_signed ? -(1 << (to.bits - 1)) : 0;
    const double hi = is_signed ? (1 << (to.bits - 1)) - 1 : (1 << to.bits) - 1;
    return Op("Min", {Op("Max", {q, Scalar(kFloat32, lo)}), Scalar(kFloat32, hi)});
  }

  /*! \brief x - zero_point in int32 (zero_point along `axis` of x when per-axis). */
  int Shifted(int x, int zero_point, int64_t axis) {
    const int wide = Cast(x, kInt32);
    if (zero_point == kAbsentValue) return wide;
    return Op("Sub", {wide, Cast(AlongAxis(zero_point, axis, TypeOf(x).shape), kInt32)});
  }

  /*! \brief (x - zero_point) * scale in float, per tensor. */
  int Dequantize(size_t x, size_t scale, size_t zero_point) {
    const int shifted = Shifted(node_.inputs.at(x), Input(zero_point), 1);
    return Op("Mul", {Cast(shifted, kFloat32), node_.inputs.at(scale)});
  }
  /*! \brief value (float) quantized by the node's inputs scale and zero_point (per tensor, or
   * along `axis` of value) into its output. */
  void QuantizeInto(int value, size_t scale, size_t zero_point, int64_t axis = 1) {
    const std::vector<int64_t> along = TypeOf(value).shape;
    const int zp = Input(zero_point);
    const DLDataType to = QuantizedType(zp);
    if (to.bits != 8)
      NodeUnsupported(node_, "quantizes to 8-bit integers, got " + DTypeToString(to));
    const int zp_along = zp == kAbsentValue ? zp : AlongAxis(zp, axis, along);
    const int q =
        QuantizeFloat(value, AlongAxis(node_.inputs.at(scale), axis, along), zp_along, to);
    OpInto(node_.outputs.at(0), "Cast", {q}, {{"to", int64_t{DTypeToOnnx(to)}}});
  }

  /*! \brief The type a quantizer writes: its zero point's, else opset 21's output_dtype, else
   * uint8; both given must agree. */
  DLDataType QuantizedType(int zero_point) const {
    const int64_t code = node_.GetInt("output_dtype", 0);
    const std::string where = "node '" + node_.name + "'";
    const DLDataType named = code == 0 ? kUInt8 : OnnxToDType(static_cast<int32_t>(code), where);
    if (zero_point == kAbsentValue) return named;
    const DLDataType zp = ctx_->TypeOf(zero_point).dtype;
    if (code != 0 && zp != named) {
      NodeError(node_, "output_dtype " + DTypeToString(named) + " and the zero point's type " +
                           DTypeToString(zp) + " differ");
    }
    return zp;
  }
};

void QuantizeLinear(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  int x = n.inputs.at(0);
  if (e.TypeOf(x).dtype != kFloat32) x = e.Cast(x, kFloat32);
  e.QuantizeInto(x, 1, 2, n.GetInt("axis", 1));
}

// (x - zero_point) * scale, computed in float32 and written in the scale's type, or in opset 23's
// output_dtype.
void DequantizeLinear(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  const int64_t axis = n.GetInt("axis", 1);
  const std::vector<int64_t> along = e.TypeOf(n.inputs.at(0)).shape;
  const int x = e.Shifted(n.inputs[0], e.Input(2), axis);
  const int scale = e.AlongAxis(n.inputs.at(1), axis, along);
  const int64_t code = n.GetInt("output_dtype", 0);
  const DLDataType out = code == 0
                             ? e.TypeOf(scale).dtype
                             : OnnxToDType(static_cast<int32_t>(code), "node '" + n.name + "'");
  if (out != kFloat32 && out != kFloat16) {
    NodeUnsupported(n, "dequantizes to float32 or float16, got " + DTypeToString(out));
  }
  const std::vector<int> operands = {e.Cast(x, kFloat32), e.Float32Scale(scale)};
  if (out == kFloat32) {
    e.OpInto(n.outputs[0], "Mul", operands);
  } else {
    e.OpInto(n.outputs[0], "Cast", {e.Op("Mul", operands)}, {{"to", int64_t{DTypeToOnnx(out)}}});
  }
}

// y_scale = (max(x, 0) - min(x, 0)) / 255, y_zero_point = saturate(round(-min / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), all uint8.
void DynamicQuantizeLinear(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  const int x = n.inputs.at(0);
  const AttrMap all = {{"keepdims", int64_t{0}}};
  const int hi = e.Op("Max", {e.Op("ReduceMax", {x}, all), e.Scalar(kFloat32, 0)});
  const int lo = e.Op("Min", {e.Op("ReduceMin", {x}, all), e.Scalar(kFloat32, 0)});
  const int scale = e.Op("Div", {e.Op("Sub", {hi, lo}), e.Scalar(kFloat32, 255)});
  const int zp = e.Op("Min", {e.Op("Max", {e.Op("Round", {e.Op("Div", {e.Op("Neg", {lo}), scale})}),
                                           e.Scalar(kFloat32, 0)}),
                              e.Scalar(kFloat32, 255)});
  int q = e.Op("Round", {e.Op("Div", {x, scale})});
  q = e.Op("Min",
           {e.Op("Max", {e.Op("Add", {q, zp}), e.Scalar(kFloat32, 0)}), e.Scalar(kFloat32, 255)});
  const AttrMap to_u8 = {{"to", int64_t{DTypeToOnnx(kUInt8)}}};
  e.OpInto(n.outputs.at(0), "Cast", {q}, to_u8);
  if (n.outputs.size() > 1) e.OpInto(n.outputs[1], "Identity", {scale});
  if (n.outputs.size() > 2) e.OpInto(n.outputs[2], "Cast", {zp}, to_u8);
}

// float32 holds every integer of magnitude up to 2^24, and integers whose magnitudes add up to at
// most that have only such partial sums, in any order of addition: a product within the bound is
// exact on the float kernels.
constexpr double kExactFloatSum = 16777216.0;

// The largest |v - zero_point| an 8-bit operand x can take: from its zero point's values when they
// are constant, else the width of its type's range.
double ShiftedMagnitude(Expander& e, int x, int zero_point) {
  const DLDataType t = e.TypeOf(x).dtype;
  const double lo = t.code == kDLInt ? -(1 << (t.bits - 1)) : 0;
  const double hi = lo + (1 << t.bits) - 1;
  if (zero_point == kAbsentValue) return std::max(-lo, hi);
  const HostTensorPtr zp = e.ConstantOf(zero_point);
  if (zp == nullptr) return hi - lo;
  double m = 0;
  for (int64_t i = 0; i < zp->NumElements(); ++i) {
    const double z = zp->GetAsDouble(i);
    m = std::max({m, std::abs(lo - z), std::abs(hi - z)});
  }
  return m;
}

// Where the reduction of an integer product runs: for a conv the input channels (axis 1 of x and
// of w, `terms` = the taps of one channel), for a MatMul the last axis of A and axis -2 of B.
struct Reduction {
  int64_t a_axis, b_axis, length, taps;
};

Reduction ReductionOf(Expander& e, bool conv, int a, int b) {
  const TensorType &at = e.TypeOf(a), &bt = e.TypeOf(b);
  if (conv) return {1, 1, bt.shape.at(1), bt.NumElements() / bt.shape.at(0) / bt.shape.at(1)};
  return {at.ndim() - 1, bt.ndim() - 2, bt.shape.at(bt.ndim() - 2), 1};
}

// sums[o][r]: sum of |b| over the taps of reduction index r of output element o (b is the
// shifted constant weight: [O][R][KH][KW] for a conv, [..][R][N] for a MatMul, o = (.., n)).
std::vector<std::vector<double>> WeightSums(const HostTensor& b, bool conv, const Reduction& r) {
  const int64_t n = conv ? 1 : b.type.shape.back();
  const int64_t outputs = b.NumElements() / (r.length * r.taps);
  std::vector<std::vector<double>> sums(static_cast<size_t>(outputs),
                                        std::vector<double>(static_cast<size_t>(r.length), 0.0));
  for (int64_t i = 0; i < b.NumElements(); ++i) {
    const int64_t red = i / r.taps / n % r.length;
    const int64_t out = i / (r.taps * r.length * n) * n + i % n;
    sums[static_cast<size_t>(out)][static_cast<size_t>(red)] += std::abs(b.GetAsDouble(i));
  }
  return sums;
}

// Into how many equal chunks of its reduction the product must split so that each chunk's sums
// stay within kExactFloatSum (each chunk then runs exactly in float32, the chunks add in int32);
// 0 when even kMaxChunks do not, or the product cannot split (a grouped conv).
int ExactChunks(Expander& e, bool conv, int a_in, int a_zp, int b_in, int b_zp, int b) {
  constexpr int kMaxChunks = 16;
  const Reduction r = ReductionOf(e, conv, a_in, b);
  const double a_mag = ShiftedMagnitude(e, a_in, a_zp);
  const HostTensorPtr weight = e.ConstantOf(b);
  const std::vector<std::vector<double>> sums =
      weight != nullptr ? WeightSums(*weight, conv, r) : std::vector<std::vector<double>>{};
  const double b_mag = ShiftedMagnitude(e, b_in, b_zp) * static_cast<double>(r.taps);
  const int most = conv && e.node().GetInt("group", 1) != 1 ? 1 : kMaxChunks;
  for (int chunks = 1; chunks <= most; ++chunks) {
    if (r.length % chunks != 0) continue;
    const int64_t len = r.length / chunks;
    double largest = weight != nullptr ? 0 : b_mag * static_cast<double>(len);
    for (const std::vector<double>& row : sums) {
      for (int64_t c = 0; c < r.length; c += len) {
        largest = std::max(largest, std::accumulate(row.begin() + c, row.begin() + c + len, 0.0));
      }
    }
    if (a_mag * largest <= kExactFloatSum) return chunks;
  }
  return 0;
}

// x - zero_point in float32 (zero_point along `axis` of x when per-axis).
int ShiftedFloat(Expander& e, int x, int zero_point, int64_t axis) {
  const int wide = e.Cast(x, kFloat32);
  if (zero_point == kAbsentValue) return wide;
  return e.Op("Sub", {wide, e.Cast(e.AlongAxis(zero_point, axis, e.TypeOf(x).shape), kFloat32)});
}

int SliceAxis(Expander& e, int x, int64_t axis, int64_t begin, int64_t end) {
  const auto ints = [&](int64_t v) { return e.Constant("_slice", MakeInt64Tensor({v})); };
  return e.Op("Slice", {x, ints(begin), ints(end), ints(axis)});
}

// The product of float operands a and b in `chunks` chunks of the reduction, each exact in float32
// and converted to int32, added in int32. A conv is marked so that no kernel transforms its
// operands first (Winograd would round).
int ChunkedFloatProduct(Expander& e, bool conv, int a, int b, int chunks) {
  AttrMap attrs = e.node().attrs;
  attrs[kExactSumAttr] = int64_t{1};
  const Reduction r = ReductionOf(e, conv, a, b);
  const int64_t len = r.length / chunks;
  int sum = kAbsentValue;
  for (int64_t c = 0; c < r.length; c += len) {
    const int ac = chunks == 1 ? a : SliceAxis(e, a, r.a_axis, c, c + len);
    const int bc = chunks == 1 ? b : SliceAxis(e, b, r.b_axis, c, c + len);
    const int part =
        e.Cast(conv ? e.Op("Conv", {ac, bc}, attrs) : e.Op("MatMul", {ac, bc}), kInt32);
    sum = sum == kAbsentValue ? part : e.Op("Add", {sum, part});
  }
  return sum;
}

// The constant 8-bit weight b minus its zero point (per tensor or per output channel, axis 0),
// [-255, 255] (int16), or null when b is not such a constant.
HostTensorPtr ShiftedWeight(Expander& e, int b, int b_zp) {
  const HostTensorPtr w = e.ConstantOf(b);
  const HostTensorPtr zp = b_zp == kAbsentValue ? nullptr : e.ConstantOf(b_zp);
  if (w == nullptr || w->type.ndim() != 4 || w->type.dtype.bits != 8 ||
      (b_zp != kAbsentValue && zp == nullptr)) {
    return nullptr;
  }
  const int64_t per_channel = w->NumElements() / w->type.shape[0];
  if (zp != nullptr && zp->NumElements() != 1 && zp->NumElements() != w->type.shape[0]) {
    return nullptr;
  }
  auto shifted = std::make_shared<HostTensor>(TensorType{w->type.shape, kInt16});
  for (int64_t i = 0; i < w->NumElements(); ++i) {
    const int64_t z =
        zp == nullptr ? 0 : zp->GetAsInt(zp->NumElements() == 1 ? 0 : i / per_channel);
    shifted->Data<int16_t>()[i] = static_cast<int16_t>(w->GetAsInt(i) - z);
  }
  return shifted;
}

// The shifted weight as int8 weights whose sum it is: itself where it fits int8, else (uint8
// weights 128 or more from their zero point, as ORT's dynamic quantization writes) the part
// within [-127, 127] and the rest; empty where neither holds (255 from the zero point). The
// first part leaves -128 out so that no two weights of -128 meet in a pair of products the NEON
// halves dot sums in int16 (te::DotS8S8Halves); the rest is -128 only 255 below the zero point.
std::vector<HostTensorPtr> Int8Terms(const HostTensor& shifted) {
  const int16_t* v = shifted.Data<int16_t>();
  const int64_t n = shifted.NumElements();
  const bool fits = std::all_of(v, v + n, [](int16_t x) { return x >= -128 && x <= 127; });
  auto first = std::make_shared<HostTensor>(TensorType{shifted.type.shape, kInt8});
  auto rest = std::make_shared<HostTensor>(TensorType{shifted.type.shape, kInt8});
  bool split = false;
  for (int64_t i = 0; i < n; ++i) {
    const int head = std::clamp<int>(v[i], fits ? -128 : -127, 127), tail = v[i] - head;
    if (tail < -128 || tail > 127) return {};
    first->Data<int8_t>()[i] = static_cast<int8_t>(head);
    rest->Data<int8_t>()[i] = static_cast<int8_t>(tail);
    split = split || tail != 0;
  }
  if (!split) return {first};
  return {first, rest};
}

// An integer conv's operands (value ids; zero points kAbsentValue where absent) and attributes:
// those of the node being canonicalized, or of a product recast as a conv (IntegerMatMul).
struct IntegerConvOperands {
  int x, x_zp, w, w_zp;
  AttrMap attrs;
};

IntegerConvOperands ConvOperandsOf(Expander& e, size_t a_index, size_t a_zp, size_t b_index,
                                   size_t b_zp) {
  return {e.node().inputs.at(a_index), e.Input(a_zp), e.node().inputs.at(b_index), e.Input(b_zp),
          e.node().attrs};
}

// The conv of c with the int8 weight w as an integer conv (kDataZeroPointAttr) with `bias` (int32
// per output channel, or absent) added, when the strategy plans an int8 kernel for it on the
// target: 8-bit data with a per-tensor zero point (constant, or computed at run time:
// kDataZeroPointInput). kAbsentValue otherwise.
int IntegerConvWith(Expander& e, const IntegerConvOperands& c, const HostTensorPtr& w, int bias) {
  const KernelStrategy* strategy = e.strategy();
  const DLDataType at = e.TypeOf(c.x).dtype;
  if (strategy == nullptr || (at != kUInt8 && at != kInt8)) return kAbsentValue;
  int64_t zero_point = 0;
  int run_time_zero_point = kAbsentValue;
  if (c.x_zp != kAbsentValue) {
    const HostTensorPtr zp = e.ConstantOf(c.x_zp);
    if (e.TypeOf(c.x_zp).NumElements() != 1 || e.TypeOf(c.x_zp).dtype != at) return kAbsentValue;
    if (zp == nullptr) {
      run_time_zero_point = c.x_zp;
    } else {
      zero_point = static_cast<int64_t>(zp->GetAsDouble(0));
    }
  }
  AttrMap attrs = c.attrs;
  attrs[kDataZeroPointAttr] = zero_point;
  // The strategy sees the weight the kernel would multiply (a kernel may depend on its values);
  // left unread when none takes it.
  std::vector<int> inputs = {c.x, e.Constant("_w_int8", w)};
  if (bias != kAbsentValue) {
    inputs.push_back(bias);
  } else if (run_time_zero_point != kAbsentValue) {
    inputs.push_back(
        e.Constant("_b0", std::make_shared<HostTensor>(TensorType{{w->type.shape[0]}, kInt32})));
  }
  if (run_time_zero_point != kAbsentValue) inputs.push_back(run_time_zero_point);
  if (!strategy->Choose(e.graph(), Node{"Conv", e.node().name, attrs, inputs, {}}).int8_dot) {
    return kAbsentValue;
  }
  return e.Op("Conv", std::move(inputs), std::move(attrs));
}

// The offsets c that bring the shifted weight into int8 (c = lo + 128, lo the smallest shifted
// weight c covers; an 8-bit weight minus its zero point spans at most 255 values): one for the
// whole weight ([1]) where its values span at most 255 (always, with a per-tensor zero point:
// the correction c * S then stays one plane per image), else one per output channel
// ([1, OC, 1, 1]). *offset_weight receives shifted - c. Null when no offset is needed (the
// shifted weight fits int8 as it is).
HostTensorPtr WeightOffsets(const HostTensor& shifted, HostTensorPtr* offset_weight) {
  const int16_t* v = shifted.Data<int16_t>();
  const auto [lo, hi] = std::minmax_element(v, v + shifted.NumElements());
  if (*lo >= -128 && *hi <= 127) return nullptr;
  const bool one = *hi - *lo <= 255;
  const int64_t channels = one ? 1 : shifted.type.shape.at(0);
  const int64_t per_offset = shifted.NumElements() / channels;
  auto offsets = std::make_shared<HostTensor>(
      TensorType{one ? std::vector<int64_t>{1} : std::vector<int64_t>{1, channels, 1, 1}, kInt32});
  auto weight = std::make_shared<HostTensor>(TensorType{shifted.type.shape, kInt8});
  for (int64_t o = 0; o < channels; ++o) {
    const int16_t* row = v + o * per_offset;
    const int c = *std::min_element(row, row + per_offset) + 128;
    offsets->Data<int32_t>()[o] = c;
    for (int64_t i = 0; i < per_offset; ++i) {
      weight->Data<int8_t>()[o * per_offset + i] = static_cast<int8_t>(row[i] - c);
    }
  }
  *offset_weight = weight;
  return offsets;
}

// Per output pixel, the sum of the shifted data x - zp over its window ([N, 1, OH, OW], int32):
// the channel sum convolved with ones over n's window (padding adds 0, as a padded x - zp is 0).
// Exact in float32 while IC * KH * KW * |x - zp| stays below 2^24; kAbsentValue otherwise, or for
// a grouped conv (each group would need its own sums).
int WindowSums(Expander& e, const IntegerConvOperands& c, const TensorType& weight) {
  const double taps = static_cast<double>(weight.NumElements() / weight.shape.at(0));
  const auto group = c.attrs.find("group");
  if ((group != c.attrs.end() && std::get<int64_t>(group->second) != 1) ||
      taps * ShiftedMagnitude(e, c.x, c.x_zp) > kExactFloatSum) {
    return kAbsentValue;
  }
  const int channel_sum = e.ReduceSum(ShiftedFloat(e, c.x, c.x_zp, 1), {1});
  auto ones = std::make_shared<HostTensor>(
      TensorType{{1, 1, weight.shape.at(2), weight.shape.at(3)}, kFloat32});
  for (int64_t i = 0; i < ones->NumElements(); ++i) ones->Data<float>()[i] = 1.0f;
  AttrMap attrs = c.attrs;
  attrs["kernel_shape"] = std::vector<int64_t>{weight.shape.at(2), weight.shape.at(3)};
  attrs[kExactSumAttr] = int64_t{1};
  return e.Cast(e.Op("Conv", {channel_sum, e.Constant("_window_ones", ones)}, attrs), kInt32);
}

// The conv of n as integer convs: one on its shifted weight where that fits int8; else (uint8
// weights 128 or more from their zero point, as ORT's dynamic quantization writes) one on the
// shifted weight minus an offset c (WeightOffsets), plus c times each pixel's window sum of the
// shifted data (WindowSums); else two whose weights add up to it, their sums added (the second
// conv's epilogue). kAbsentValue where the weight splits in no such way or a conv gets no int8
// kernel.
int IntegerConv(Expander& e, const IntegerConvOperands& c, int bias) {
  const HostTensorPtr shifted = ShiftedWeight(e, c.w, c.w_zp);
  if (shifted == nullptr) return kAbsentValue;
  HostTensorPtr offset_weight;
  const HostTensorPtr offsets = WeightOffsets(*shifted, &offset_weight);
  if (offsets != nullptr) {
    const int sums = WindowSums(e, c, shifted->type);
    if (sums != kAbsentValue) {
      const int conv = IntegerConvWith(e, c, offset_weight, bias);
      if (conv == kAbsentValue) return kAbsentValue;
      return e.Op("Add", {conv, e.Op("Mul", {sums, e.Constant("_w_offsets", offsets)})});
    }
  }
  int sum = kAbsentValue;
  for (const HostTensorPtr& w : Int8Terms(*shifted)) {
    const int term = IntegerConvWith(e, c, w, sum == kAbsentValue ? bias : kAbsentValue);
    if (term == kAbsentValue) return kAbsentValue;  // the first term's conv is dead code then
    sum = sum == kAbsentValue ? term : e.Op("Add", {sum, term});
  }
  return sum;
}

int Reshape(Expander& e, int x, const std::vector<int64_t>& shape) {
  return e.Op("Reshape", {x, e.Constant("_shape", MakeInt64Tensor(shape))});
}

int Transpose2d(Expander& e, int x) {
  return e.Op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}});
}

// A MatMul of 8-bit A [.., K] by a constant 8-bit B [K, N] as a 1x1 integer conv (IntegerConv)
// whose plane is A's rows: data [1, K, R, 1] (A's R rows transposed), weight [N, K, 1, 1] (B
// transposed), so that the int8 conv kernels take it (a GEMV is a conv of one pixel, its weights
// kept 8-bit); the [1, N, R, 1] sums transposed back. kAbsentValue where A's zero point is per
// row, B is not such a constant, or no int8 kernel takes the conv.
int IntegerMatMul(Expander& e, size_t a_index, size_t a_zp, size_t b_index, size_t b_zp) {
  const Node& n = e.node();
  const int a = n.inputs.at(a_index), a_zero = e.Input(a_zp);
  const HostTensorPtr b = e.ConstantOf(n.inputs.at(b_index));
  const TensorType at = e.TypeOf(a);
  if (b == nullptr || b->type.ndim() != 2 || b->type.dtype.bits != 8 || at.dtype.bits != 8 ||
      at.ndim() < 1 || at.shape.back() != b->type.shape[0] ||
      (a_zero != kAbsentValue && e.TypeOf(a_zero).NumElements() != 1)) {
    return kAbsentValue;
  }
  const int64_t k = b->type.shape[0], cols = b->type.shape[1], rows = at.NumElements() / k;
  const std::shared_ptr<HostTensor> weight = Transpose2d(*b);
  weight->type.shape = {cols, k, 1, 1};
  const int x = rows == 1 ? Reshape(e, a, {1, k, 1, 1})
                          : Reshape(e, Transpose2d(e, Reshape(e, a, {rows, k})), {1, k, rows, 1});
  const IntegerConvOperands c{x,
                              a_zero,
                              e.Constant("_b_transposed", weight),
                              e.Input(b_zp),
                              {{"kernel_shape", std::vector<int64_t>{1, 1}}}};
  const int sums = IntegerConv(e, c, kAbsentValue);
  if (sums == kAbsentValue) return kAbsentValue;
  std::vector<int64_t> shape(at.shape.begin(), at.shape.end() - 1);
  shape.push_back(cols);
  return Reshape(e, rows == 1 ? sums : Transpose2d(e, Reshape(e, sums, {cols, rows})), shape);
}

int FloatOrInt32Product(Expander& e, bool conv, size_t a_index, size_t a_zp, size_t b_index,
                        size_t b_zp) {
  const Node& n = e.node();
  const int a_in = n.inputs.at(a_index), b_in = n.inputs.at(b_index);
  const int64_t a_axis = conv ? 1 : e.TypeOf(a_in).ndim() - 2;
  const int64_t b_axis = conv ? 0 : e.TypeOf(b_in).ndim() - 1;
  if (e.TypeOf(a_in).dtype.bits == 8 && e.TypeOf(b_in).dtype.bits == 8) {
    const int b = ShiftedFloat(e, b_in, e.Input(b_zp), b_axis);
    const int chunks = ExactChunks(e, conv, a_in, e.Input(a_zp), b_in, e.Input(b_zp), b);
    if (chunks > 0) {
      return ChunkedFloatProduct(e, conv, ShiftedFloat(e, a_in, e.Input(a_zp), a_axis), b, chunks);
    }
  }
  const int a = e.Shifted(a_in, e.Input(a_zp), a_axis);
  const int b = e.Shifted(b_in, e.Input(b_zp), b_axis);
  if (!conv) return e.Op("MatMul", {a, b});
  return e.Op("Conv", {a, b}, n.attrs);
}

// The int32 product of the zero-point-shifted operands: a is n's input a_index (zero point at
// a_zp, per row of a MatMul's A), b at b_index (zero point at b_zp, per output channel: axis 0
// of a conv weight, the last axis of a MatMul's B), plus `bias` (int32 per output channel of a
// conv, or absent). A conv an int8 kernel takes stays an integer conv (IntegerConv), and so does
// a MatMul by a constant B as one (IntegerMatMul). Otherwise,
// when the operands bound the sums below 2^24 (a constant weight shows its sums; 8-bit
// activations are at most 255 from their zero point), whole or in chunks of the reduction, it
// runs in float32 on the fast conv and dense kernels, exactly; else in int32.
int IntegerProduct(Expander& e, bool conv, size_t a_index, size_t a_zp, size_t b_index, size_t b_zp,
                   int bias = kAbsentValue) {
  if (conv) {  // the expansion sizes its reduction from W before any shape rule sees the node
    CheckConvOperands(e.node(), e.TypeOf(e.node().inputs.at(a_index)),
                      e.TypeOf(e.node().inputs.at(b_index)), e.node().GetInt("group", 1));
  }
  // The int8 kernels index the weight's zero point and the bias by output channel.
  const std::vector<int64_t>& b_shape = e.TypeOf(e.node().inputs.at(b_index)).shape;
  if (!b_shape.empty()) {
    const int64_t channels = conv ? b_shape[0] : b_shape.back();
    const std::string axis =
        std::string(conv ? "axis 0" : "the last axis") + " of the weight " + ShapeToString(b_shape);
    const int w_zp = e.Input(b_zp);
    if (w_zp != kAbsentValue && e.TypeOf(w_zp).NumElements() != 1) {
      e.RequireOnePerIndex(w_zp, channels, axis);
    }
    if (bias != kAbsentValue) e.RequireOnePerIndex(bias, channels, axis);
  }
  const int integer = conv ? IntegerConv(e, ConvOperandsOf(e, a_index, a_zp, b_index, b_zp), bias)
                           : IntegerMatMul(e, a_index, a_zp, b_index, b_zp);
  if (integer != kAbsentValue) return integer;
  const int product = FloatOrInt32Product(e, conv, a_index, a_zp, b_index, b_zp);
  if (bias == kAbsentValue) return product;
  return e.Op("Add", {product, e.AlongAxis(bias, 1, e.TypeOf(product).shape)});
}

void ConvInteger(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  e.OpInto(n.outputs[0], "Identity", {IntegerProduct(e, true, 0, 2, 1, 3)});
}

void MatMulInteger(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  e.OpInto(n.outputs[0], "Identity", {IntegerProduct(e, false, 0, 2, 1, 3)});
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]) and
// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the int32 accumulator
// (+ bias), times x_scale * w_scale / y_scale, rounded half to even, + y_zp, saturated.
void QLinear(Node n, CanonicalizeContext* ctx, bool conv) {
  Expander e(n, ctx);
  const int acc = IntegerProduct(e, conv, 0, 2, 3, 5, conv ? e.Input(8) : kAbsentValue);
  const std::vector<int64_t>& along = e.TypeOf(acc).shape;
  const int64_t channel_axis = conv ? 1 : static_cast<int64_t>(along.size()) - 1;
  const int w_scale = e.AlongAxis(n.inputs.at(4), channel_axis, along);
  const int multiplier = e.Op("Div", {e.Op("Mul", {n.inputs.at(1), w_scale}), n.inputs.at(6)});
  const int y_zp = n.inputs.at(7);
  const DLDataType to = e.TypeOf(y_zp).dtype;
  const int scaled = e.Op("Mul", {e.Cast(acc, kFloat32), multiplier});
  const int q = e.QuantizeFloat(scaled, kAbsentValue, y_zp, to);
  e.OpInto(n.outputs[0], "Cast", {q}, {{"to", int64_t{DTypeToOnnx(to)}}});
}

// ONNX Runtime's com.microsoft QOperator ops, by their definition: dequantize the inputs,
// compute in float, quantize the result (ORT's kernels agree up to rounding ties).
// QLinearAdd / QLinearMul (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp).
void QLinearBinary(Node n, CanonicalizeContext* ctx, const char* op) {
  Expander e(n, ctx);
  e.QuantizeInto(e.Op(op, {e.Dequantize(0, 1, 2), e.Dequantize(3, 4, 5)}), 6, 7);
}

// QLinearSigmoid (X, X_scale, X_zp, Y_scale, Y_zp).
void QLinearSigmoid(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  e.QuantizeInto(e.Op("Sigmoid", {e.Dequantize(0, 1, 2)}), 3, 4);
}

// QLinearGlobalAveragePool (X, x_scale, x_zp, y_scale, y_zp; channels_last).
void QLinearGlobalAveragePool(Node n, CanonicalizeContext* ctx) {
  Expander e(n, ctx);
  const int x = e.Dequantize(0, 1, 2);
  int mean;
  if (n.GetInt("channels_last", 0) != 0) {
    std::vector<int64_t> axes;
    for (int64_t a = 1; a + 1 < e.TypeOf(x).ndim(); ++a) axes.push_back(a);
    const AttrMap keep = {{"keepdims", int64_t{1}}};
    if (ctx->opset() >= 18) {
      mean = e.Op("ReduceMean", {x, ctx->Constant(n.name + "_axes", MakeInt64Tensor(axes))}, keep);
    } else {
      AttrMap attrs = keep;
      attrs["axes"] = axes;
      mean = e.Op("ReduceMean", {x}, attrs);
    }
  } else {
    mean = e.Op("GlobalAveragePool", {x});
  }
  e.QuantizeInto(mean, 3, 4);
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("QLinearAdd", [](Node n, CanonicalizeContext* ctx) {
  QLinearBinary(std::move(n), ctx, "Add");
});
EMBER_REGISTER_OP_CANONICALIZE("QLinearMul", [](Node n, CanonicalizeContext* ctx) {
  QLinearBinary(std::move(n), ctx, "Mul");
});
EMBER_REGISTER_OP_CANONICALIZE("QLinearSigmoid", QLinearSigmoid);
EMBER_REGISTER_OP_CANONICALIZE("QLinearGlobalAveragePool", QLinearGlobalAveragePool);
EMBER_REGISTER_OP_CANONICALIZE("QuantizeLinear", QuantizeLinear);
EMBER_REGISTER_OP_CANONICALIZE("DequantizeLinear", DequantizeLinear);
EMBER_REGISTER_OP_CANONICALIZE("DynamicQuantizeLinear", DynamicQuantizeLinear);
EMBER_REGISTER_OP_CANONICALIZE("ConvInteger", ConvInteger);
EMBER_REGISTER_OP_CANONICALIZE("MatMulInteger", MatMulInteger);
EMBER_REGISTER_OP_CANONICALIZE("QLinearConv", [](Node n, CanonicalizeContext* ctx) {
  QLinear(std::move(n), ctx, true);
});
EMBER_REGISTER_OP_CANONICALIZE("QLinearMatMul", [](Node n, CanonicalizeContext* ctx) {
  QLinear(std::move(n), ctx, false);
});

}  // namespace compiler
}  // namespace ember
