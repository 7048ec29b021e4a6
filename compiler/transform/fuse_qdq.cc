// FuseQdq: the QDQ layout (ONNX Runtime's quantizer's default) as integer ops. A float Conv or
// MatMul whose operands come from DequantizeLinear and whose result goes to QuantizeLinear means
// an integer op: ORT runs it as QLinearConv / QLinearMatMul, the integer products requantized
// once. Computed in float from dequantized values, each product rounds and outputs move by
// whole steps; so, before canonicalization, the pattern becomes the QLinear op, which compiles
// exactly (canonical_quantized.cc):
//   Q(Conv(DQ(x), DQ(w), DQ(b)))  ->  QLinearConv(x, x_scale, x_zp, w, .., y_scale, y_zp, b)
//   Q(Relu(Conv(..)))             ->  Max(QLinearConv(..), y_zp)  (Q is monotone and Q(0) = y_zp)
//   Q(MatMul(DQ(a), DQ(b)))       ->  QLinearMatMul(a, .., b, .., y_scale, y_zp)
//   Q(Gemm(DQ(a), DQ(b), DQ(c)))  ->  Q(Cast(MatMulInteger(a, b', a_zp, b_zp) + c) * multiplier,
//                                       1, y_zp)  (requantized as QLinearMatMul is; b' below)
// Only where the integer op means the same: constant scales and zero points, activations per
// tensor, constant weights per tensor or per output channel, an int32 bias at scale
// x_scale * w_scale with zero point 0, and intermediate float values nothing else reads.
// A product whose float result is not quantized again (a classifier's last Gemm, a detection
// head's conv) is still an integer product, dequantized once, as ORT's QGemm and
// MatMulIntegerToFloat run it; its weight stays 8-bit:
//   Conv(DQ(x), DQ(w), DQ(b))  ->  Cast(ConvInteger(x, w, x_zp, w_zp) + b) * (x_scale * w_scale)
//   Gemm(DQ(a), DQ(b), c)      ->  Cast(MatMulInteger(a, b', a_zp, b_zp)) * (..) + c  (and MatMul)
// b' being b, or b transposed for transB; c an int32 bias at that scale is added before the Cast.
// A MaxPool of a dequantized 8-bit value pools the bytes instead, as ONNX Runtime's QDQ MaxPool
// does: a DequantizeLinear with a positive scale never decreases, so it commutes with max
// exactly, and the dequantization (with the next quantization) runs on the pooled output:
//   MaxPool(DQ(x))  ->  DQ(MaxPool(x))
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
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].op == "MaxPool" && removed_.count(i) == 0) TryPoolBytes(i);
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

  // A Conv, MatMul or Gemm of DequantizeLinear'd operands as an integer product: the activation
  // per tensor, the constant 8-bit weight per tensor or per output channel (transposed for a
  // Gemm's transB), and its bias: an int32 one at x_scale * w_scale that joins the integer sums,
  // or a float one (a Gemm's C) added after the scaling.
  struct Product {
    const Node* op = nullptr;
    const Node *dx = nullptr, *dw = nullptr;
    bool conv = false, trans_b = false;
    int64_t channels = 0;
    int int_bias = kAbsentValue, float_bias = kAbsentValue;
  };

  bool MatchProduct(const Node& op, Product* p) const {
    p->op = &op;
    p->conv = op.op == "Conv";
    const bool gemm = op.op == "Gemm";
    if ((!p->conv && !gemm && op.op != "MatMul") || op.inputs.size() < 2 ||
        op.outputs.size() != 1) {
      return false;
    }
    if (gemm && (op.GetFloat("alpha", 1.0) != 1.0 || op.GetInt("transA", 0) != 0 ||
                 op.GetFloat("beta", 1.0) != 1.0)) {
      return false;
    }
    size_t dx_index = 0, dw_index = 0, db_index = 0;
    p->dx = Producer(op.inputs[0], "DequantizeLinear", &dx_index);
    p->dw = Producer(op.inputs[1], "DequantizeLinear", &dw_index);
    if (p->dx == nullptr || p->dw == nullptr || p->dw->inputs.size() < 3 ||
        !QuantParams(*p->dx, 0, 0, 0)) {
      return false;
    }
    const HostTensor* w = Constant(p->dw->inputs.at(0));
    if (w == nullptr || w->type.dtype.bits != 8 || w->type.ndim() != (p->conv ? 4 : 2)) {
      return false;
    }
    p->trans_b = gemm && op.GetInt("transB", 0) != 0;
    const int64_t out_axis = p->conv || p->trans_b ? 0 : 1;
    p->channels = w->type.shape[static_cast<size_t>(out_axis)];
    if (!QuantParams(*p->dw, out_axis, p->channels, w->type.ndim())) return false;
    if (!op.HasInput(2)) return true;
    const Node* db = Producer(op.inputs[2], "DequantizeLinear", &db_index);
    if (db != nullptr &&
        BiasFits(*db, *Constant(p->dx->inputs[1]), *Constant(p->dw->inputs[1]), p->channels)) {
      p->int_bias = db->inputs[0];
    } else if (!p->conv) {
      p->float_bias = op.inputs[2];
    } else {
      return false;  // a conv's float bias: the float path
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
    if (op == nullptr) op = SoleProducer(product, "MatMul", &op_index);
    if (op == nullptr) op = SoleProducer(product, "Gemm", &op_index);
    Product p;
    if (op == nullptr || !MatchProduct(*op, &p) || p.float_bias != kAbsentValue) return;
    const Value& y = g_->value(q.outputs[0]);
    const int quantized = relu != nullptr
                              ? g_->AddValue(g_->UniqueName(y.name + "_before_relu"), TensorType{})
                              : q.outputs[0];
    std::vector<Node> out;
    if (op->op == "Gemm") {
      // No QLinear op takes a Gemm's bias or transB: the integer product requantized as
      // QLinearMatMul is (by x_scale * w_scale / y_scale, then rounded and offset by y_zp).
      const int scaled = ScaledProduct(p, Constant(q.inputs[1]), kAbsentValue, &out);
      const int one =
          g_->AddConstant(g_->UniqueName(op->name + "_one"), MakeScalarTensor(kFloat32, 1.0));
      out.push_back(Node{"QuantizeLinear", q.name, {}, {scaled, one, q.inputs[2]}, {quantized}});
    } else {
      std::vector<int> inputs = {p.dx->inputs[0], p.dx->inputs[1], p.dx->inputs[2], p.dw->inputs[0],
                                 p.dw->inputs[1], p.dw->inputs[2], q.inputs[1],     q.inputs[2]};
      if (p.int_bias != kAbsentValue) inputs.push_back(p.int_bias);
      out.push_back(Node{p.conv ? "QLinearConv" : "QLinearMatMul",
                         op->name,
                         p.conv ? op->attrs : AttrMap{},
                         std::move(inputs),
                         {quantized}});
    }
    if (relu != nullptr) {
      out.push_back(Node{"Max", relu->name, {}, {quantized, q.inputs[2]}, {q.outputs[0]}});
      removed_.insert(relu_index);
    }
    removed_.insert(op_index);
    replacement_[q_index] = std::move(out);
    ++(p.conv ? stats_.qlinear_conv : stats_.qlinear_matmul);
  }

  // A constant float32 tensor holding x_scale * w_scale, divided by y_scale when given (per output
  // channel when w_scale is, shaped to broadcast along the output's channel axis), rounded as
  // ORT and the QLinear ops compute it: in float32 at each step.
  int Multiplier(const Product& p, const HostTensor* y_scale) {
    const HostTensor &x_scale = *Constant(p.dx->inputs[1]), &w_scale = *Constant(p.dw->inputs[1]);
    const int64_t n = w_scale.NumElements();
    std::vector<int64_t> shape;
    if (n != 1) shape = p.conv ? std::vector<int64_t>{1, n, 1, 1} : std::vector<int64_t>{n};
    auto t = std::make_shared<HostTensor>(TensorType{shape, kFloat32});
    for (int64_t i = 0; i < n; ++i) {
      float v =
          static_cast<float>(x_scale.GetAsDouble(0)) * static_cast<float>(w_scale.GetAsDouble(i));
      if (y_scale != nullptr) v /= static_cast<float>(y_scale->GetAsDouble(0));
      t->Data<float>()[i] = v;
    }
    return g_->AddConstant(g_->UniqueName(p.op->name + "_scale"), t);
  }

  int NewValue(const std::string& name) { return g_->AddValue(g_->UniqueName(name), TensorType{}); }

  // Appends to *out the integer product of p (ConvInteger / MatMulInteger, plus its int32 bias)
  // cast to float and scaled by Multiplier(p, y_scale) into `scaled` (a new value when
  // kAbsentValue); returns it.
  int ScaledProduct(const Product& p, const HostTensor* y_scale, int scaled,
                    std::vector<Node>* out) {
    const Node& op = *p.op;
    const std::string& name = op.name;
    const int sums = NewValue(name + "_int32");
    const HostTensor& w = *Constant(p.dw->inputs[0]);
    const int weight = p.trans_b
                           ? g_->AddConstant(g_->UniqueName(name + "_b_transposed"), Transpose2d(w))
                           : p.dw->inputs[0];
    out->push_back(Node{p.conv ? "ConvInteger" : "MatMulInteger",
                        name,
                        p.conv ? op.attrs : AttrMap{},
                        {p.dx->inputs[0], weight, p.dx->inputs[2], p.dw->inputs[2]},
                        {sums}});
    int acc = sums;
    if (p.int_bias != kAbsentValue) {
      int bias = p.int_bias;
      if (p.conv) bias = Reshaped(p.int_bias, {1, p.channels, 1, 1}, name + "_bias");
      acc = NewValue(name + "_biased");
      out->push_back(Node{"Add", name + "_bias", {}, {sums, bias}, {acc}});
    }
    const int wide = NewValue(name + "_float");
    out->push_back(Node{"Cast", name + "_float", {{"to", int64_t{1}}}, {acc}, {wide}});
    if (scaled == kAbsentValue) scaled = NewValue(name + "_scaled");
    out->push_back(Node{"Mul", name + "_scale", {}, {wide, Multiplier(p, y_scale)}, {scaled}});
    return scaled;
  }

  void TryFuseFloatResult(size_t op_index) {
    Product p;
    if (!MatchProduct(g_->nodes()[op_index], &p)) return;
    const Node& op = *p.op;
    std::vector<Node> out;
    const bool add_c = p.float_bias != kAbsentValue;
    const int scaled = ScaledProduct(p, nullptr, add_c ? kAbsentValue : op.outputs[0], &out);
    if (add_c)
      out.push_back(Node{"Add", op.name + "_c", {}, {scaled, p.float_bias}, {op.outputs[0]}});
    replacement_[op_index] = std::move(out);
    ++stats_.float_result;
  }

  // MaxPool(DQ(x)) -> DQ(MaxPool(x)) for 8-bit x dequantized per tensor by a constant positive
  // scale (and no Indices output: the positions would be the same, but stay with the float op).
  void TryPoolBytes(size_t pool_index) {
    const Node& pool = g_->nodes()[pool_index];
    size_t dq_index = 0;
    const Node* dq =
        pool.inputs.empty() ? nullptr : Producer(pool.inputs[0], "DequantizeLinear", &dq_index);
    if (dq == nullptr || pool.outputs.size() != 1 || !QuantParams(*dq, 0, 0, 0)) return;
    // x's type is its zero point's (types are inferred after this pass).
    const DLDataType x_type = Constant(dq->inputs[2])->type.dtype;
    const double scale = Constant(dq->inputs[1])->GetAsDouble(0);
    if ((x_type != kUInt8 && x_type != kInt8) || !(scale > 0) || !std::isfinite(scale)) {
      return;
    }
    const Value& y = g_->value(pool.outputs[0]);
    const int pooled = g_->AddValue(g_->UniqueName(y.name + "_bytes"), TensorType{});
    std::vector<Node> out;
    out.push_back(Node{"MaxPool", pool.name, pool.attrs, {dq->inputs[0]}, {pooled}});
    out.push_back(Node{"DequantizeLinear",
                       g_->UniqueName(pool.name + "_dequantize"),
                       {},
                       {pooled, dq->inputs[1], dq->inputs[2]},
                       {pool.outputs[0]}});
    replacement_[pool_index] = std::move(out);
    ++stats_.max_pool;
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
