// FuseQdq: the QDQ layout (ONNX Runtime's quantizer's default) as integer ops. A float Conv or
// MatMul whose operands come from DequantizeLinear and whose result goes to QuantizeLinear means
// an integer op: ORT runs it as QLinearConv / QLinearMatMul, the integer products requantized
// once. Computed in float from dequantized values, each product rounds and outputs move by
// whole steps; so, before canonicalization, the pattern becomes the QLinear op, which compiles
// exactly (canonical_quantized.cc):
//   Q(Conv(DQ(x), DQ(w), DQ(b)))  ->  QLinearConv(x, x_scale, x_zp, w, .., y_scale, y_zp, b)
//   Q(Relu(Conv(..)))             ->  Max(QLinearConv(..), y_zp)  (Q is monotone and Q(0) = y_zp)
//   Q(MatMul(DQ(a), DQ(b)))       ->  QLinearMatMul(a, .., b, .., y_scale, y_zp)
// Only where the integer op means the same: constant scales and zero points, activations per
// tensor, constant weights per tensor or per output channel, an int32 bias at scale
// x_scale * w_scale with zero point 0, and intermediate float values nothing else reads.
// A product whose float result is not quantized again (a classifier's last Gemm, a detection
// head's conv) is still an integer product, dequantized once, as ORT's QGemm and
// MatMulIntegerToFloat run it; its weight stays 8-bit:
//   Conv(DQ(x), DQ(w), DQ(b))  ->  Cast(ConvInteger(x, w, x_zp, w_zp) + b) * (x_scale * w_scale)
//   Gemm(DQ(a), DQ(b), c)      ->  Cast(MatMulInteger(a, b', a_zp, b_zp)) * (..) + c  (and MatMul)
// b' being b, or b transposed for transB; c an int32 bias at that scale is added before the Cast.
#include <ember/compiler/transform.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ember {
namespace compiler {
namespace {

class QdqFuser {
 public:
  explicit QdqFuser(Graph* g) : g_(g), uses_(g->UseCounts()), producers_(g->Producers()) {
    for (int out : g->outputs()) graph_output_.push_back(out);
  }

  FuseQdqStats Run() {
    std::vector<Node>& nodes = g_->nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].op != "QuantizeLinear" || removed_.count(i) != 0) continue;
      TryFuse(i);
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string& op = nodes[i].op;
      if ((op != "Conv" && op != "MatMul" && op != "Gemm") || removed_.count(i) != 0) continue;
      TryFuseFloatResult(i);
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (replacement_.count(i) != 0) {
        for (Node& n : replacement_[i]) kept.push_back(std::move(n));
      } else if (removed_.count(i) == 0) {
        kept.push_back(std::move(nodes[i]));
      }
    }
    nodes = std::move(kept);
    return stats_;
  }

 private:
  // The node writing value v, when it is `op` and v is read once (and is not a graph output).
  const Node* SoleProducer(int v, const char* op, size_t* index) const {
    if (v < 0 || uses_[static_cast<size_t>(v)] != 1 || IsGraphOutput(v)) return nullptr;
    return Producer(v, op, index);
  }
  const Node* Producer(int v, const char* op, size_t* index) const {
    if (v < 0 || producers_[static_cast<size_t>(v)] < 0) return nullptr;
    *index = static_cast<size_t>(producers_[static_cast<size_t>(v)]);
    const Node& n = g_->nodes()[*index];
    return n.op == op && removed_.count(*index) == 0 ? &n : nullptr;
  }
  bool IsGraphOutput(int v) const {
    for (int out : graph_output_) {
      if (out == v) return true;
    }
    return false;
  }
  const HostTensor* Constant(int v) const {
    return v >= 0 && g_->value(v).is_constant() ? g_->value(v).constant.get() : nullptr;
  }
  // A DequantizeLinear with constant scale and zero point, per tensor (per_axis_length 0) or
  // along axis `axis` of length per_axis_length.
  bool QuantParams(const Node& dq, int64_t axis, int64_t per_axis_length, int64_t rank) const {
    if (dq.inputs.size() < 3 || dq.inputs[2] == kAbsentValue) return false;
    const HostTensor *scale = Constant(dq.inputs[1]), *zp = Constant(dq.inputs[2]);
    if (scale == nullptr || zp == nullptr || scale->NumElements() != zp->NumElements()) {
      return false;
    }
    if (scale->NumElements() == 1) return true;
    int64_t dq_axis = dq.GetInt("axis", 1);
    if (dq_axis < 0) dq_axis += rank;
    return per_axis_length > 0 && dq_axis == axis && scale->NumElements() == per_axis_length &&
           scale->type.ndim() == 1;
  }

  // An int32 bias at scale x_scale * w_scale (per channel), zero point 0.
  bool BiasFits(const Node& db, const HostTensor& x_scale, const HostTensor& w_scale,
                int64_t channels) const {
    if (db.inputs.size() < 2) return false;
    const HostTensor *b = Constant(db.inputs[0]), *scale = Constant(db.inputs[1]);
    const HostTensor* zp = db.inputs.size() > 2 ? Constant(db.inputs[2]) : nullptr;
    if (b == nullptr || b->type.dtype != kInt32 || b->NumElements() != channels ||
        scale == nullptr || (db.inputs.size() > 2 && db.inputs[2] != kAbsentValue && !zp)) {
      return false;
    }
    const auto per_channel_or_one = [&](const HostTensor* t) {
      return t == nullptr || t->NumElements() == 1 || t->NumElements() == channels;
    };
    if (!per_channel_or_one(scale) || !per_channel_or_one(zp)) return false;
    for (int64_t c = 0; c < channels; ++c) {
      if (zp != nullptr && zp->GetAsDouble(zp->NumElements() == 1 ? 0 : c) != 0) return false;
      const double expect = static_cast<float>(
          x_scale.GetAsDouble(0) * w_scale.GetAsDouble(w_scale.NumElements() == 1 ? 0 : c));
      const double got = scale->GetAsDouble(scale->NumElements() == 1 ? 0 : c);
      if (std::abs(got - expect) > 1e-6 * std::abs(expect)) return false;
    }
    return true;
  }

  void TryFuse(size_t q_index) {
    const Node& q = g_->nodes()[q_index];
    if (q.inputs.size() < 3 || q.inputs[2] == kAbsentValue || !Constant(q.inputs[1]) ||
        !Constant(q.inputs[2]) || Constant(q.inputs[1])->NumElements() != 1) {
      return;
    }
    size_t relu_index = 0, op_index = 0;
    const Node* relu = SoleProducer(q.inputs[0], "Relu", &relu_index);
    const int product = relu != nullptr ? relu->inputs.at(0) : q.inputs[0];
    const Node* op = SoleProducer(product, "Conv", &op_index);
    const bool conv = op != nullptr;
    if (!conv) op = SoleProducer(product, "MatMul", &op_index);
    if (op == nullptr || op->inputs.size() < 2) return;
    size_t dx_index = 0, dw_index = 0, db_index = 0;
    const Node* dx = Producer(op->inputs[0], "DequantizeLinear", &dx_index);
    const Node* dw = Producer(op->inputs[1], "DequantizeLinear", &dw_index);
    if (dx == nullptr || dw == nullptr || dw->inputs.size() < 3 || !QuantParams(*dx, 0, 0, 0)) {
      return;
    }
    const HostTensor* w = Constant(dw->inputs.at(0));
    if (w == nullptr || w->type.ndim() != (conv ? 4 : 2)) return;
    const int64_t channels = conv ? w->type.shape[0] : w->type.shape[1];
    if (!QuantParams(*dw, conv ? 0 : 1, channels, w->type.ndim())) return;
    std::vector<int> inputs = {dx->inputs[0], dx->inputs[1], dx->inputs[2], dw->inputs[0],
                               dw->inputs[1], dw->inputs[2], q.inputs[1],   q.inputs[2]};
    if (op->HasInput(2)) {
      const Node* db = Producer(op->inputs[2], "DequantizeLinear", &db_index);
      if (!conv || db == nullptr ||
          !BiasFits(*db, *Constant(dx->inputs[1]), *Constant(dw->inputs[1]), channels)) {
        return;
      }
      inputs.push_back(db->inputs[0]);
    }
    Node fused{conv ? "QLinearConv" : "QLinearMatMul",
               op->name,
               conv ? op->attrs : AttrMap{},
               std::move(inputs),
               {q.outputs.at(0)}};
    std::vector<Node> out;
    if (relu != nullptr) {
      const Value& y = g_->value(q.outputs[0]);
      fused.outputs[0] = g_->AddValue(g_->UniqueName(y.name + "_before_relu"), TensorType{});
      out.push_back(std::move(fused));
      out.push_back(
          Node{"Max", relu->name, {}, {out.back().outputs[0], q.inputs[2]}, {q.outputs[0]}});
      removed_.insert(relu_index);
    } else {
      out.push_back(std::move(fused));
    }
    removed_.insert(op_index);
    replacement_[q_index] = std::move(out);
    ++(conv ? stats_.qlinear_conv : stats_.qlinear_matmul);
  }

  // A constant float tensor of `shape` holding x_scale * w_scale (per output channel when w_scale
  // is), in float32 as ORT multiplies them.
  int ScaleProduct(const HostTensor& x_scale, const HostTensor& w_scale,
                   const std::vector<int64_t>& per_channel_shape, const std::string& name) {
    const int64_t n = w_scale.NumElements();
    auto t = std::make_shared<HostTensor>(
        TensorType{n == 1 ? std::vector<int64_t>{} : per_channel_shape, kFloat32});
    for (int64_t i = 0; i < n; ++i) {
      t->Data<float>()[i] =
          static_cast<float>(x_scale.GetAsDouble(0)) * static_cast<float>(w_scale.GetAsDouble(i));
    }
    return g_->AddConstant(g_->UniqueName(name), t);
  }

  int NewValue(const std::string& name) { return g_->AddValue(g_->UniqueName(name), TensorType{}); }

  void TryFuseFloatResult(size_t op_index) {
    const Node& op = g_->nodes()[op_index];
    const bool conv = op.op == "Conv", gemm = op.op == "Gemm";
    if (op.inputs.size() < 2 || op.outputs.size() != 1) return;
    if (gemm && (op.GetFloat("alpha", 1.0f) != 1.0f || op.GetInt("transA", 0) != 0 ||
                 op.GetFloat("beta", 1.0f) != 1.0f)) {
      return;
    }
    size_t dx_index = 0, dw_index = 0, db_index = 0;
    const Node* dx = Producer(op.inputs[0], "DequantizeLinear", &dx_index);
    const Node* dw = Producer(op.inputs[1], "DequantizeLinear", &dw_index);
    if (dx == nullptr || dw == nullptr || dw->inputs.size() < 3 || !QuantParams(*dx, 0, 0, 0)) {
      return;
    }
    const HostTensor* w = Constant(dw->inputs.at(0));
    if (w == nullptr || w->type.dtype.bits != 8 || w->type.ndim() != (conv ? 4 : 2)) return;
    const bool trans_b = gemm && op.GetInt("transB", 0) != 0;
    const int64_t out_axis = conv || trans_b ? 0 : 1;
    const int64_t channels = w->type.shape[static_cast<size_t>(out_axis)];
    if (!QuantParams(*dw, out_axis, channels, w->type.ndim())) return;
    const HostTensor &x_scale = *Constant(dx->inputs[1]), &w_scale = *Constant(dw->inputs[1]);
    // The bias: an int32 one at x_scale * w_scale joins the integer sums; a float one (a Gemm's
    // C) is added after the scaling; a conv's float bias is left to the float path.
    int int_bias = kAbsentValue, float_bias = kAbsentValue;
    if (op.HasInput(2)) {
      const Node* db = Producer(op.inputs[2], "DequantizeLinear", &db_index);
      if (db != nullptr && BiasFits(*db, x_scale, w_scale, channels)) {
        int_bias = db->inputs[0];
      } else if (!conv) {
        float_bias = op.inputs[2];
      } else {
        return;
      }
    }
    const std::string& name = op.name;
    std::vector<Node> out;
    const int sums = NewValue(name + "_int32");
    const int weight =
        trans_b ? g_->AddConstant(g_->UniqueName(name + "_b_transposed"), Transpose2d(*w))
                : dw->inputs[0];
    out.push_back(Node{conv ? "ConvInteger" : "MatMulInteger",
                       name,
                       conv ? op.attrs : AttrMap{},
                       {dx->inputs[0], weight, dx->inputs[2], dw->inputs[2]},
                       {sums}});
    int acc = sums;
    if (int_bias != kAbsentValue) {
      int bias = int_bias;
      if (conv) bias = Reshaped(int_bias, {1, channels, 1, 1}, name + "_bias");
      acc = NewValue(name + "_biased");
      out.push_back(Node{"Add", name + "_bias", {}, {sums, bias}, {acc}});
    }
    const int wide = NewValue(name + "_float");
    out.push_back(Node{"Cast", name + "_float", {{"to", int64_t{1}}}, {acc}, {wide}});
    const std::vector<int64_t> per_channel =
        conv ? std::vector<int64_t>{1, channels, 1, 1} : std::vector<int64_t>{channels};
    const int scale = ScaleProduct(x_scale, w_scale, per_channel, name + "_scale");
    const int y = op.outputs[0];
    const int scaled = float_bias == kAbsentValue ? y : NewValue(name + "_scaled");
    out.push_back(Node{"Mul", name + "_scale", {}, {wide, scale}, {scaled}});
    if (float_bias != kAbsentValue) {
      out.push_back(Node{"Add", name + "_c", {}, {scaled, float_bias}, {y}});
    }
    replacement_[op_index] = std::move(out);
    ++stats_.float_result;
  }

  // The constant int32 value v reshaped, as a new constant.
  int Reshaped(int v, const std::vector<int64_t>& shape, const std::string& name) {
    auto t = std::make_shared<HostTensor>(*Constant(v));
    t->type.shape = shape;
    return g_->AddConstant(g_->UniqueName(name), t);
  }

  Graph* g_;
  std::vector<int> uses_, producers_, graph_output_;
  std::set<size_t> removed_;
  std::map<size_t, std::vector<Node>> replacement_;
  FuseQdqStats stats_;
};

}  // namespace

FuseQdqStats FuseQdq(Graph* graph) { return QdqFuser(graph).Run(); }

}  // namespace compiler
}  // namespace ember
