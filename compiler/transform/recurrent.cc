// LSTM, GRU and RNN (every ONNX attribute and optional input) as primitive ops unrolled over the
// static sequence, registered as their canonicalization rules: one MatMul projects the input of
// all time steps per direction, then each step is a MatMul with the recurrent weights and the
// gate math (which fusion joins to it). sequence_lens is honoured per batch row for both
// directions. The equations are the ONNX operator specification's; gate order iofc (LSTM), zrh
// (GRU), i (RNN).
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/rewrite_context.h"

namespace ember {
namespace compiler {
namespace {

struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
  bool has_alpha = false, has_beta = false;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

enum class Cell { kLstm, kGru, kRnn };

class RecurrentExpander {
 public:
  RecurrentExpander(const Node& n, Cell cell, RewriteContext* ctx)
      : n_(n), cell_(cell), ctx_(*ctx), g_(ctx->graph()) {}

  void Run() {
    ReadAttributes();
    int x = n_.inputs[0];
    const TensorType xt = g_.value(x).type;
    if (xt.ndim() != 3) NodeError(n_, "X must have rank 3, got " + xt.ToString());
    dtype_ = xt.dtype;
    if (dtype_.code != kDLFloat) NodeUnsupported(n_, "X must be a float tensor");
    if (layout_ == 1) x = Transpose(x, {1, 0, 2}, "_x_seq_major");
    seq_ = layout_ == 1 ? xt.shape[1] : xt.shape[0];
    batch_ = layout_ == 1 ? xt.shape[0] : xt.shape[1];
    input_size_ = xt.shape[2];
    CheckWeights();
    std::vector<int> ys, hs, cs;
    for (int64_t d = 0; d < dirs_; ++d) {
      Direction out = RunDirection(x, d);
      ys.push_back(Reshape(out.y, {seq_, 1, batch_, hidden_}, Tag(d, "_y4")));
      hs.push_back(Reshape(out.h, {1, batch_, hidden_}, Tag(d, "_h3")));
      if (out.c >= 0) cs.push_back(Reshape(out.c, {1, batch_, hidden_}, Tag(d, "_c3")));
    }
    int y = Concat(ys, 1, "_y");
    int h = Concat(hs, 0, "_y_h");
    int c = cs.empty() ? -1 : Concat(cs, 0, "_y_c");
    if (layout_ == 1) {
      y = Transpose(y, {2, 0, 1, 3}, "_y_batch_major");
      h = Transpose(h, {1, 0, 2}, "_y_h_batch_major");
      if (c >= 0) c = Transpose(c, {1, 0, 2}, "_y_c_batch_major");
    }
    const int results[] = {y, h, c};
    for (size_t i = 0; i < n_.outputs.size() && i < 3; ++i) {
      if (results[i] < 0) continue;
      ctx_.EmitInto(Node{
          "Identity", n_.name + "_output" + std::to_string(i), {}, {results[i]}, {n_.outputs[i]}});
    }
  }

 private:
  struct Direction {
    int y = -1, h = -1, c = -1;
  };

  bool IsLstm() const { return cell_ == Cell::kLstm; }
  bool IsGru() const { return cell_ == Cell::kGru; }
  std::string Tag(int64_t d, const std::string& what) const {
    return n_.name + "_d" + std::to_string(d) + what;
  }

  void ReadAttributes() {
    gates_ = IsLstm() ? 4 : IsGru() ? 3 : 1;
    hidden_ = n_.GetInt("hidden_size", 0);
    if (hidden_ <= 0) NodeError(n_, "attribute 'hidden_size' must be positive");
    layout_ = n_.GetInt("layout", 0);
    if (layout_ != 0 && layout_ != 1) {
      NodeError(n_, "attribute 'layout' must be 0 or 1, got " + std::to_string(layout_));
    }
    direction_ = n_.GetString("direction", "forward");
    if (direction_ != "forward" && direction_ != "reverse" && direction_ != "bidirectional") {
      NodeError(n_, "attribute 'direction' must be forward, reverse or bidirectional, got '" +
                        direction_ + "'");
    }
    dirs_ = direction_ == "bidirectional" ? 2 : 1;
    clip_ = n_.HasAttr("clip") ? n_.GetFloat("clip") : 0;
    if (n_.HasAttr("clip") && clip_ <= 0) NodeError(n_, "attribute 'clip' must be positive");
    input_forget_ = IsLstm() && n_.GetInt("input_forget", 0) != 0;
    linear_before_reset_ = IsGru() && n_.GetInt("linear_before_reset", 0) != 0;
    const std::vector<std::string> defaults =
        IsLstm()  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
        : IsGru() ? std::vector<std::string>{"sigmoid", "tanh"}
                  : std::vector<std::string>{"tanh"};
    const size_t per_dir = defaults.size();
    std::vector<std::string> names =
        n_.HasAttr("activations") ? n_.GetStrings("activations") : std::vector<std::string>();
    if (names.empty()) {
      for (int64_t d = 0; d < dirs_; ++d)
        names.insert(names.end(), defaults.begin(), defaults.end());
    }
    if (names.size() != per_dir * static_cast<size_t>(dirs_)) {
      NodeError(n_, "attribute 'activations' must name " +
                        std::to_string(per_dir * static_cast<size_t>(dirs_)) + " functions (" +
                        std::to_string(per_dir) + " per direction), got " +
                        std::to_string(names.size()));
    }
    const std::vector<double> alphas = n_.GetFloats("activation_alpha", {});
    const std::vector<double> betas = n_.GetFloats("activation_beta", {});
    // The lists are consumed in order by the functions that take an alpha (a beta), as ONNX
    // Runtime reads them: ["Relu", "LeakyRelu"] with alpha [0.1] gives LeakyRelu 0.1.
    size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : names) {
      Activation a;
      a.name = Lower(name);
      const bool takes_beta =
          a.name == "affine" || a.name == "scaledtanh" || a.name == "hardsigmoid";
      const bool takes_alpha =
          takes_beta || a.name == "leakyrelu" || a.name == "thresholdedrelu" || a.name == "elu";
      a.has_alpha = takes_alpha && next_alpha < alphas.size();
      a.has_beta = takes_beta && next_beta < betas.size();
      if (a.has_alpha) a.alpha = alphas[next_alpha++];
      if (a.has_beta) a.beta = betas[next_beta++];
      activations_.push_back(a);
    }
  }

  const TensorType& TypeOf(int v) const { return g_.value(v).type; }

  void ExpectShape(size_t input, const std::vector<int64_t>& shape, const char* what) {
    if (!n_.HasInput(input)) return;
    const TensorType& t = TypeOf(n_.inputs[input]);
    if (t.shape != shape) {
      NodeError(n_, std::string("input ") + what + " must be " + ShapeToString(shape) + ", got " +
                        t.ToString());
    }
  }

  void CheckWeights() {
    const int64_t gh = gates_ * hidden_;
    if (!n_.HasInput(1) || !n_.HasInput(2)) NodeError(n_, "inputs W and R are required");
    ExpectShape(1, {dirs_, gh, input_size_}, "W");
    ExpectShape(2, {dirs_, gh, hidden_}, "R");
    ExpectShape(3, {dirs_, 2 * gh}, "B");
    ExpectShape(4, {batch_}, "sequence_lens");
    const std::vector<int64_t> state = layout_ == 1 ? std::vector<int64_t>{batch_, dirs_, hidden_}
                                                    : std::vector<int64_t>{dirs_, batch_, hidden_};
    ExpectShape(5, state, "initial_h");
    if (IsLstm()) {
      ExpectShape(6, state, "initial_c");
      ExpectShape(7, {dirs_, 3 * hidden_}, "P");
    }
  }

  // ---- small builders over the context

  int Scalar(double v, DLDataType dtype, const std::string& name) {
    return ctx_.Scalar(n_.name + name, dtype, v);
  }
  int Indices(int64_t begin, int64_t count, const std::string& name) {
    std::vector<int64_t> idx(static_cast<size_t>(count));
    std::iota(idx.begin(), idx.end(), begin);
    return ctx_.Constant(n_.name + name, MakeInt64Tensor(idx));
  }
  int Zeros(const std::vector<int64_t>& shape, const std::string& name) {
    auto t = std::make_shared<HostTensor>(TensorType{shape, dtype_});
    t->data.assign(static_cast<size_t>(t->type.ByteSize()), 0);
    return ctx_.Constant(n_.name + name, t);
  }
  // x[index] along `axis`, the axis removed (index a scalar) or kept (index a vector).
  int Take(int x, int index, int64_t axis, const std::string& name) {
    return ctx_.Emit("Gather", n_.name + name, {x, index}, {{"axis", axis}});
  }
  int TakeAt(int x, int64_t i, int64_t axis, const std::string& name) {
    return Take(x, ctx_.Scalar(n_.name + name + "_at", kInt64, i), axis, name);
  }
  int TakeRange(int x, int64_t begin, int64_t count, int64_t axis, const std::string& name) {
    return Take(x, Indices(begin, count, name + "_range"), axis, name);
  }
  int Transpose(int x, std::vector<int64_t> perm, const std::string& name) {
    return ctx_.Emit("Transpose", n_.name + name, {x}, {{"perm", std::move(perm)}});
  }
  int Reshape(int x, std::vector<int64_t> shape, const std::string& name) {
    return ctx_.Emit("Reshape", n_.name + name, {x}, {{"__out_shape", std::move(shape)}});
  }
  int Concat(const std::vector<int>& parts, int64_t axis, const std::string& name) {
    if (parts.size() == 1) return parts[0];
    return ctx_.Emit("Concat", n_.name + name, parts, {{"axis", axis}});
  }
  int Binary(const char* op, int a, int b, const std::string& name) {
    return ctx_.Emit(op, n_.name + name, {a, b});
  }
  int Unary(const char* op, int a, const std::string& name, AttrMap attrs = {}) {
    return ctx_.Emit(op, n_.name + name, {a}, std::move(attrs));
  }

  int Activate(const Activation& a, int x, const std::string& name) {
    const std::string& f = a.name;
    auto alpha = [&](double dflt) { return a.has_alpha ? a.alpha : dflt; };
    auto beta = [&](double dflt) { return a.has_beta ? a.beta : dflt; };
    if (f == "sigmoid") return Unary("Sigmoid", x, name);
    if (f == "tanh") return Unary("Tanh", x, name);
    if (f == "relu") return Unary("Relu", x, name);
    if (f == "softsign") return Unary("Softsign", x, name);
    if (f == "softplus") return Unary("Softplus", x, name);
    if (f == "leakyrelu") return Unary("LeakyRelu", x, name, {{"alpha", alpha(0.01)}});
    if (f == "thresholdedrelu") return Unary("ThresholdedRelu", x, name, {{"alpha", alpha(1.0)}});
    if (f == "elu") return Unary("Elu", x, name, {{"alpha", alpha(1.0)}});
    if (f == "hardsigmoid") {
      return Unary("HardSigmoid", x, name, {{"alpha", alpha(0.2)}, {"beta", beta(0.5)}});
    }
    if (f == "affine") {
      int scaled = Binary("Mul", x, Scalar(alpha(1.0), dtype_, name + "_alpha"), name + "_mul");
      return Binary("Add", scaled, Scalar(beta(0.0), dtype_, name + "_beta"), name);
    }
    if (f == "scaledtanh") {
      int inner = Binary("Mul", x, Scalar(beta(1.0), dtype_, name + "_beta"), name + "_in");
      int t = Unary("Tanh", inner, name + "_tanh");
      return Binary("Mul", t, Scalar(alpha(1.0), dtype_, name + "_alpha"), name);
    }
    NodeUnsupported(n_, "activation '" + a.name +
                            "' (valid: Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                            "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
  }

  // A gate's pre-activation, clipped when the node says so.
  int Clip(int x, const std::string& name) {
    if (clip_ <= 0) return x;
    return Unary("Clip", x, name + "_clip", {{"min", -clip_}, {"max", clip_}});
  }

  // ---- one direction

  // Weights of direction d, transposed for products on the right: [K, N].
  int WeightT(size_t input, int64_t d, int64_t row, int64_t rows, const std::string& name) {
    int w = TakeAt(n_.inputs[input], d, 0, Tag(d, name));
    if (rows != TypeOf(w).shape[0]) w = TakeRange(w, row, rows, 0, Tag(d, name + "_rows"));
    return Transpose(w, {1, 0}, Tag(d, name + "_t"));
  }

  // The bias added to the input projection: Wb + Rb, except GRU's Rbh when it is applied inside
  // the reset gate's product (linear_before_reset).
  int InputBias(int64_t d) {
    const int64_t gh = gates_ * hidden_;
    if (!n_.HasInput(3)) return -1;
    int b = TakeAt(n_.inputs[3], d, 0, Tag(d, "_b"));
    int wb = TakeRange(b, 0, gh, 0, Tag(d, "_wb"));
    int rb = TakeRange(b, gh, linear_before_reset_ ? 2 * hidden_ : gh, 0, Tag(d, "_rb"));
    if (linear_before_reset_)
      rb = Concat({rb, Zeros({hidden_}, Tag(d, "_rbh0"))}, 0, Tag(d, "_rbz"));
    return Binary("Add", wb, rb, Tag(d, "_bias"));
  }

  int InitialState(size_t input, int64_t d, const std::string& name) {
    if (!n_.HasInput(input)) return Zeros({batch_, hidden_}, Tag(d, name + "0"));
    int s = n_.inputs[input];
    return TakeAt(s, d, layout_ == 1 ? 1 : 0, Tag(d, name + "0"));
  }

  // [B, 1] true where step `t` (a position in the sequence) is inside row b's length. Shared by
  // both directions and by the recurrence and the output stacking, so made once per t.
  int Inside(int64_t t) {
    auto it = inside_.find(t);
    if (it != inside_.end()) return it->second;
    const int lens = n_.inputs[4];
    const std::string name = "_len_inside" + std::to_string(t);
    int step = Scalar(static_cast<double>(t), TypeOf(lens).dtype, name + "_t");
    int mask = Reshape(Binary("Less", step, lens, name + "_less"), {batch_, 1}, name + "_mask");
    return inside_[t] = mask;
  }

  // Per row b, the flat row (len_b - 1 - k) * B + b of a [S * B, ...] tensor: the k-th element
  // of row b's valid prefix counted from its end (clamped at 0 past the prefix). Made once per k.
  int ReversedRows(int64_t k) {
    auto it = reversed_rows_.find(k);
    if (it != reversed_rows_.end()) return it->second;
    if (lens_i64_ < 0) {
      lens_i64_ = Unary("Cast", n_.inputs[4], "_lens_i64",
                        {{"to", int64_t{7}}, {"__dtype", std::string("int64")}});
    }
    const std::string name = "_len_rows" + std::to_string(k);
    int pos = Binary("Sub", lens_i64_, Scalar(static_cast<double>(k + 1), kInt64, name + "_k"),
                     name + "_pos");
    pos = Binary("Max", pos, Scalar(0, kInt64, name + "_zero"), name + "_clamped");
    int row =
        Binary("Mul", pos, Scalar(static_cast<double>(batch_), kInt64, name + "_b"), name + "_row");
    return reversed_rows_[k] =
               Binary("Add", row, Indices(0, batch_, name + "_cols"), name + "_flat");
  }

  Direction RunDirection(int x, int64_t d) {
    const bool reverse = direction_ == "reverse" || d == 1;
    const bool lens = n_.HasInput(4);
    const int64_t gh = gates_ * hidden_;
    const size_t act = static_cast<size_t>(d) * (IsLstm() ? 3 : IsGru() ? 2 : 1);
    // The input projection of every step at once.
    int xw = Binary("MatMul", x, WeightT(1, d, 0, gh, "_w"), Tag(d, "_xw"));
    if (int bias = InputBias(d); bias >= 0) xw = Binary("Add", xw, bias, Tag(d, "_xwb"));
    const int xw_rows = reverse && lens ? Reshape(xw, {seq_ * batch_, gh}, Tag(d, "_xw_rows")) : -1;
    // Recurrent weights: GRU's candidate gate multiplies separately (after or before reset).
    const int64_t joint = IsGru() ? 2 * hidden_ : gh;
    const int r_t = WeightT(2, d, 0, joint, "_r");
    const int rh_t = IsGru() ? WeightT(2, d, 2 * hidden_, hidden_, "_rh") : -1;
    int rbh = -1;
    if (linear_before_reset_ && n_.HasInput(3)) {
      rbh = TakeRange(TakeAt(n_.inputs[3], d, 0, Tag(d, "_b_for_rbh")), gh + 2 * hidden_, hidden_,
                      0, Tag(d, "_rbh"));
    }
    int peep[3] = {-1, -1, -1};  // i, o, f
    if (IsLstm() && n_.HasInput(7)) {
      int p = TakeAt(n_.inputs[7], d, 0, Tag(d, "_p"));
      for (int k = 0; k < 3; ++k)
        peep[k] = TakeRange(p, k * hidden_, hidden_, 0, Tag(d, "_p" + std::to_string(k)));
    }
    int h = InitialState(5, d, "_h");
    int c = IsLstm() ? InitialState(6, d, "_c") : -1;
    const int zeros = lens ? Zeros({batch_, hidden_}, Tag(d, "_pad")) : -1;
    std::vector<int> steps(static_cast<size_t>(seq_));
    const size_t values_before = g_.values().size();
    for (int64_t k = 0; k < seq_; ++k) {
      if (k == 1) RefuseLongUnrolling(g_.values().size() - values_before);
      const std::string s = Tag(d, "_s" + std::to_string(k));
      // Without lengths a reverse direction walks the sequence backwards; with them, each row
      // walks its own valid prefix backwards.
      const int64_t t = reverse ? seq_ - 1 - k : k;
      int x_k = reverse && lens ? Take(xw_rows, ReversedRows(k), 0, s + "_x")
                                : TakeAt(xw, t, 0, s + "_x");
      int h_new = -1, c_new = -1;
      if (IsLstm()) {
        int gates = Binary("Add", x_k, Binary("MatMul", h, r_t, s + "_hr"), s + "_gates");
        auto gate = [&](int64_t k2, const char* tag) {
          return TakeRange(gates, k2 * hidden_, hidden_, 1, s + tag);
        };
        int i = gate(0, "_i"), o = gate(1, "_o"), f = gate(2, "_f"), cc = gate(3, "_cc");
        if (peep[0] >= 0) i = Binary("Add", i, Binary("Mul", peep[0], c, s + "_pi"), s + "_ip");
        if (peep[2] >= 0) f = Binary("Add", f, Binary("Mul", peep[2], c, s + "_pf"), s + "_fp");
        i = Activate(activations_[act], Clip(i, s + "_i"), s + "_ia");
        f = input_forget_ ? Binary("Sub", Scalar(1, dtype_, s + "_one"), i, s + "_fa")
                          : Activate(activations_[act], Clip(f, s + "_f"), s + "_fa");
        cc = Activate(activations_[act + 1], Clip(cc, s + "_cc"), s + "_cca");
        c_new = Binary("Add", Binary("Mul", f, c, s + "_fc"), Binary("Mul", i, cc, s + "_icc"),
                       s + "_c");
        if (peep[1] >= 0) {
          o = Binary("Add", o, Binary("Mul", peep[1], c_new, s + "_po"), s + "_op");
        }
        o = Activate(activations_[act], Clip(o, s + "_o"), s + "_oa");
        h_new = Binary("Mul", o, Activate(activations_[act + 2], c_new, s + "_hc"), s + "_h");
      } else if (IsGru()) {
        int zr = Binary("Add", TakeRange(x_k, 0, 2 * hidden_, 1, s + "_xzr"),
                        Binary("MatMul", h, r_t, s + "_hr"), s + "_zr");
        int z = Activate(activations_[act], Clip(TakeRange(zr, 0, hidden_, 1, s + "_z"), s + "_z"),
                         s + "_za");
        int r = Activate(activations_[act],
                         Clip(TakeRange(zr, hidden_, hidden_, 1, s + "_r"), s + "_r"), s + "_ra");
        int xh = TakeRange(x_k, 2 * hidden_, hidden_, 1, s + "_xh");
        int hh;
        if (linear_before_reset_) {
          int lin = Binary("MatMul", h, rh_t, s + "_hrh");
          if (rbh >= 0) lin = Binary("Add", lin, rbh, s + "_hrhb");
          hh = Binary("Add", xh, Binary("Mul", r, lin, s + "_rlin"), s + "_hh");
        } else {
          int rh = Binary("MatMul", Binary("Mul", r, h, s + "_rhp"), rh_t, s + "_rhr");
          hh = Binary("Add", xh, rh, s + "_hh");
        }
        hh = Activate(activations_[act + 1], Clip(hh, s + "_hh"), s + "_hha");
        // (1 - z) * hh + z * h = hh + z * (h - hh)
        h_new = Binary("Add", hh, Binary("Mul", z, Binary("Sub", h, hh, s + "_dh"), s + "_zdh"),
                       s + "_h");
      } else {
        int pre = Binary("Add", x_k, Binary("MatMul", h, r_t, s + "_hr"), s + "_pre");
        h_new = Activate(activations_[act], Clip(pre, s + "_pre"), s + "_h");
      }
      if (lens) {
        // Rows whose sequence ended keep their state, and their outputs are zero. Step k is live
        // for row b while k < len_b, in either direction.
        int live = Inside(k);
        steps[static_cast<size_t>(k)] =
            ctx_.Emit("Where", Tag(d, "_y" + std::to_string(k)), {live, h_new, zeros});
        h = ctx_.Emit("Where", s + "_hkeep", {live, h_new, h});
        if (c >= 0) c = ctx_.Emit("Where", s + "_ckeep", {live, c_new, c});
      } else {
        steps[static_cast<size_t>(k)] = h_new;
        h = h_new;
        if (c >= 0) c = c_new;
      }
    }
    Direction out;
    out.h = h;
    out.c = c;
    out.y = StackSteps(steps, reverse, lens, d);
    return out;
  }

  // Refuses the node when unrolling it would instantiate more than kMaxUnrolledNodes nodes, given
  // the values its first step made (each node makes one; constants a few more).
  void RefuseLongUnrolling(size_t values_per_step) const {
    const int64_t per_step = static_cast<int64_t>(values_per_step);
    if (per_step * seq_ * dirs_ <= kMaxUnrolledNodes) return;
    NodeUnsupported(n_, "unrolling its " + std::to_string(seq_) + " time steps" +
                            (dirs_ > 1 ? " in both directions" : "") + " takes more than " +
                            std::to_string(kMaxUnrolledNodes) + " nodes (" +
                            std::to_string(per_step) + " per step)");
  }

  // Y of one direction, [S, B, H], from the per-step outputs in processing order.
  int StackSteps(const std::vector<int>& steps, bool reverse, bool lens, int64_t d) {
    std::vector<int> rows;
    for (int64_t k = 0; k < seq_; ++k) {
      const int64_t from = reverse && !lens ? seq_ - 1 - k : k;
      rows.push_back(Reshape(steps[static_cast<size_t>(from)], {1, batch_, hidden_},
                             Tag(d, "_y3_" + std::to_string(k))));
    }
    int y = Concat(rows, 0, Tag(d, "_y_steps"));
    if (!(reverse && lens)) return y;
    // Step k of row b holds position len_b - 1 - k: gather each position back, zero past len_b.
    int flat = Reshape(y, {seq_ * batch_, hidden_}, Tag(d, "_y_rows"));
    const int zeros = Zeros({batch_, hidden_}, Tag(d, "_y_pad"));
    std::vector<int> positions;
    for (int64_t t = 0; t < seq_; ++t) {
      const std::string s = Tag(d, "_yt" + std::to_string(t));
      int picked = Take(flat, ReversedRows(t), 0, s + "_pick");
      int y_t = ctx_.Emit("Where", s + "_y", {Inside(t), picked, zeros});
      positions.push_back(Reshape(y_t, {1, batch_, hidden_}, s + "_y3"));
    }
    return Concat(positions, 0, Tag(d, "_y_positions"));
  }

  const Node& n_;
  const Cell cell_;
  RewriteContext& ctx_;
  Graph& g_;
  DLDataType dtype_{};
  int64_t gates_ = 1, hidden_ = 0, layout_ = 0, dirs_ = 1;
  int64_t seq_ = 0, batch_ = 0, input_size_ = 0;
  std::string direction_;
  double clip_ = 0;
  bool input_forget_ = false, linear_before_reset_ = false;
  std::vector<Activation> activations_;
  // sequence_lens helpers, by step index (see Inside, ReversedRows).
  std::map<int64_t, int> inside_, reversed_rows_;
  int lens_i64_ = -1;
};

template <Cell kCell>
void CanonicalizeRecurrent(Node n, CanonicalizeContext* ctx) {
  RecurrentExpander(n, kCell, ctx).Run();
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("LSTM", CanonicalizeRecurrent<Cell::kLstm>);
EMBER_REGISTER_OP_CANONICALIZE("GRU", CanonicalizeRecurrent<Cell::kGru>);
EMBER_REGISTER_OP_CANONICALIZE("RNN", CanonicalizeRecurrent<Cell::kRnn>);

}  // namespace compiler
}  // namespace ember
