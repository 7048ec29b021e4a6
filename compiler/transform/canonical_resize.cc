// Canonical forms of Resize and Upsample (registered as their canonicalization rules).
#include <ember/compiler/ir/op_registry.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// Resize/Upsample whose scales arrive at run time: the model's declared output shape fixes the
// sizes, and each resized axis becomes index math on the run-time scale + Gather (separable).
void ResizeAtRunTime(Node& n, bool upsample, CanonicalizeContext* ctx) {
  bool legacy = upsample || ctx->opset() < 11;
  int scales = legacy ? n.inputs[1] : n.inputs[2];
  auto decl = ctx->graph().declared_types.find(n.outputs[0]);
  if (decl == ctx->graph().declared_types.end()) {
    NodeUnsupported(n,
                    "scales are computed at run time and the model does not declare the "
                    "output shape; make the scales a constant");
  }
  std::vector<int64_t> out_shape = decl->second.shape;
  TensorType x = ctx->TypeOf(n.inputs[0]);
  if (static_cast<int64_t>(out_shape.size()) != x.ndim() || x.dtype.code != kDLFloat) {
    NodeUnsupported(n, "run-time scales need a float input and a declared output of equal rank");
  }
  std::string mode = n.GetString("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  std::string ctm =
      legacy ? "asymmetric" : n.GetString("coordinate_transformation_mode", "half_pixel");
  std::string nm = legacy ? "floor" : n.GetString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    NodeUnsupported(n,
                    "run-time scales support modes nearest, linear and cubic, got '" + mode + "'");
  }
  if (ctm != "half_pixel" && ctm != "asymmetric" && ctm != "align_corners" &&
      ctm != "pytorch_half_pixel" && ctm != "tf_half_pixel_for_nn") {
    NodeUnsupported(n, "coordinate_transformation_mode '" + ctm + "' with run-time scales");
  }
  DLDataType sdt = ctx->TypeOf(scales).dtype;
  auto scalar = [&](double v, DLDataType dt) { return ctx->Scalar(n.name + "_c", dt, v); };
  auto clip = [&](int v, double lo, double hi, const std::string& tag) {
    return ctx->Emit("Clip", n.name + tag, {v}, {{"min", lo}, {"max", hi}});
  };
  auto to_index = [&](int v, const std::string& tag) { return ctx->Cast(n.name + tag, v, kInt64); };
  int cur = n.inputs[0];
  for (int64_t d = 0; d < x.ndim(); ++d) {
    int64_t in_d = x.shape[d], out_d = out_shape[d];
    if (in_d == out_d && d < 2) continue;  // batch/channel axes: scale 1 in practice
    std::string tag = "_ax" + std::to_string(d);
    auto o = std::make_shared<HostTensor>(TensorType{{out_d}, sdt});
    for (int64_t i = 0; i < out_d; ++i) o->SetFromDouble(i, static_cast<double>(i));
    int t;
    int oid = ctx->graph().AddConstant(ctx->graph().UniqueName(n.name + tag + "_out_index"), o);
    int s = ctx->Emit("Gather", n.name + tag + "_scale",
                      {scales, ctx->Scalar(n.name + tag + "_axis", kInt64, static_cast<double>(d))},
                      {{"axis", int64_t{0}}});
    if (ctm == "align_corners") {
      // x * (in - 1) / (in * scale - 1): ONNX uses the unrounded resized length.
      if (out_d <= 1) {
        t = ctx->graph().AddConstant(ctx->graph().UniqueName(n.name + tag + "_coord"),
                                     std::make_shared<HostTensor>(TensorType{{out_d}, sdt}));
      } else {
        int len =
            ctx->Emit("Mul", n.name + tag + "_len", {s, scalar(static_cast<double>(in_d), sdt)});
        int den = ctx->Emit("Sub", n.name + tag + "_den", {len, scalar(1, sdt)});
        int num = ctx->Emit("Mul", n.name + tag + "_num",
                            {oid, scalar(static_cast<double>(in_d - 1), sdt)});
        t = ctx->Emit("Div", n.name + tag + "_coord", {num, den});
      }
    } else {
      if (ctm == "asymmetric") {
        t = ctx->Emit("Div", n.name + tag + "_coord", {oid, s});
      } else {
        int shifted = ctx->Emit("Add", n.name + tag + "_center", {oid, scalar(0.5, sdt)});
        t = ctx->Emit("Div", n.name + tag + "_scaled", {shifted, s});
        if (ctm != "tf_half_pixel_for_nn") {
          t = ctx->Emit("Sub", n.name + tag + "_coord", {t, scalar(0.5, sdt)});
        }
        if (ctm == "pytorch_half_pixel" && out_d <= 1) {
          t = ctx->graph().AddConstant(ctx->graph().UniqueName(n.name + tag + "_coord"),
                                       std::make_shared<HostTensor>(TensorType{{out_d}, sdt}));
        }
      }
    }
    double hi = static_cast<double>(in_d - 1);
    if (mode == "nearest") {
      int r;
      if (nm == "round_prefer_floor") {
        r = ctx->Emit("Ceil", n.name + tag + "_round",
                      {ctx->Emit("Sub", n.name + tag + "_half", {t, scalar(0.5, sdt)})});
      } else if (nm == "round_prefer_ceil") {
        r = ctx->Emit("Floor", n.name + tag + "_round",
                      {ctx->Emit("Add", n.name + tag + "_half", {t, scalar(0.5, sdt)})});
      } else if (nm == "floor") {
        r = ctx->Emit("Floor", n.name + tag + "_round", {t});
      } else if (nm == "ceil") {
        r = ctx->Emit("Ceil", n.name + tag + "_round", {t});
      } else {
        NodeUnsupported(n, "nearest_mode '" + nm + "'");
      }
      int idx = to_index(clip(r, 0, hi, tag + "_clamp"), tag + "_index");
      cur = ctx->Emit("Gather", n.name + tag + "_gather", {cur, idx}, {{"axis", d}});
    } else if (mode == "cubic") {
      // Keys' cubic over taps floor(t)-1 .. floor(t)+2; edge taps repeat the border sample, or
      // with exclude_outside get weight 0 and the remaining weights are renormalised.
      double a = n.GetFloat("cubic_coeff_a", -0.75);
      bool exclude = n.GetInt("exclude_outside", 0) != 0;
      int f = ctx->Emit("Floor", n.name + tag + "_floor", {t});
      int s = ctx->Emit("Sub", n.name + tag + "_frac", {t, f});
      auto mul = [&](int p, int q, const std::string& k) {
        return ctx->Emit("Mul", n.name + tag + k, {p, q});
      };
      auto addc = [&](int p, double c, const std::string& k) {
        return ctx->Emit("Add", n.name + tag + k, {p, scalar(c, sdt)});
      };
      auto mulc = [&](int p, double c, const std::string& k) {
        return ctx->Emit("Mul", n.name + tag + k, {p, scalar(c, sdt)});
      };
      // Near kernel (|x| <= 1): ((a+2)x - (a+3)) x^2 + 1.
      auto near = [&](int xv, const std::string& k) {
        int inner = addc(mulc(xv, a + 2, k + "_n1"), -(a + 3), k + "_n2");
        return addc(mul(mul(inner, xv, k + "_n3"), xv, k + "_n4"), 1, k + "_n5");
      };
      // Far kernel (1 < |x| < 2): ((a x - 5a) x + 8a) x - 4a.
      auto far = [&](int xv, const std::string& k) {
        int p1 = addc(mulc(xv, a, k + "_f1"), -5 * a, k + "_f2");
        int p2 = addc(mul(p1, xv, k + "_f3"), 8 * a, k + "_f4");
        return addc(mul(p2, xv, k + "_f5"), -4 * a, k + "_f6");
      };
      int one_minus = ctx->Emit("Sub", n.name + tag + "_omf", {scalar(1, sdt), s});
      std::vector<int> w = {far(addc(s, 1, "_x0"), "_w0"), near(s, "_w1"), near(one_minus, "_w2"),
                            far(addc(one_minus, 1, "_x3"), "_w3")};
      std::vector<int> idx(4);
      for (int k = 0; k < 4; ++k) {
        std::string kt = tag + "_t" + std::to_string(k);
        int raw = addc(f, static_cast<double>(k - 1), kt + "_raw");
        int cl = clip(raw, 0, hi, kt + "_clamp");
        idx[k] = to_index(cl, kt + "_index");
        if (exclude) {
          // 1 inside the input, 0 outside: positions are whole numbers, so |clamped - raw| >= 1.
          int dist = ctx->Emit("Abs", n.name + kt + "_dist",
                               {ctx->Emit("Sub", n.name + kt + "_off", {cl, raw})});
          int inside = ctx->Emit("Sub", n.name + kt + "_inside",
                                 {scalar(1, sdt), clip(dist, 0, 1, kt + "_d")});
          w[k] = mul(w[k], inside, kt + "_masked");
        }
      }
      if (exclude) {
        int sum = ctx->Emit("Add", n.name + tag + "_wsum01", {w[0], w[1]});
        sum = ctx->Emit("Add", n.name + tag + "_wsum012", {sum, w[2]});
        sum = ctx->Emit("Add", n.name + tag + "_wsum", {sum, w[3]});
        for (int k = 0; k < 4; ++k) {
          w[k] = ctx->Emit("Div", n.name + tag + "_wn" + std::to_string(k), {w[k], sum});
        }
      }
      std::vector<int64_t> wshape(static_cast<size_t>(x.ndim()), 1);
      wshape[d] = out_d;
      int acc = -1;
      for (int k = 0; k < 4; ++k) {
        std::string kt = tag + "_t" + std::to_string(k);
        int g = ctx->Emit("Gather", n.name + kt + "_gather", {cur, idx[k]}, {{"axis", d}});
        int wr = ctx->Emit("Reshape", n.name + kt + "_wshape", {w[k]}, {{"__out_shape", wshape}});
        int term = mul(g, wr, kt + "_term");
        acc = acc < 0 ? term : ctx->Emit("Add", n.name + kt + "_acc", {acc, term});
      }
      cur = acc;
    } else {
      int tc = clip(t, 0, hi, tag + "_clamp");
      int f = ctx->Emit("Floor", n.name + tag + "_floor", {tc});
      int w = ctx->Emit("Sub", n.name + tag + "_weight", {tc, f});
      int i0 = to_index(f, tag + "_i0");
      int f1 =
          clip(ctx->Emit("Add", n.name + tag + "_next", {f, scalar(1, sdt)}), 0, hi, tag + "_c1");
      int i1 = to_index(f1, tag + "_i1");
      int g0 = ctx->Emit("Gather", n.name + tag + "_g0", {cur, i0}, {{"axis", d}});
      int g1 = ctx->Emit("Gather", n.name + tag + "_g1", {cur, i1}, {{"axis", d}});
      std::vector<int64_t> wshape(static_cast<size_t>(x.ndim()), 1);
      wshape[d] = out_d;
      int wr = ctx->Emit("Reshape", n.name + tag + "_wshape", {w}, {{"__out_shape", wshape}});
      int diff = ctx->Emit("Sub", n.name + tag + "_diff", {g1, g0});
      cur = ctx->Emit("Add", n.name + tag + "_lerp",
                      {g0, ctx->Emit("Mul", n.name + tag + "_step", {diff, wr})});
    }
  }
  if (ctx->TypeOf(cur).shape != out_shape) {
    NodeError(n, "run-time scales give " + ctx->TypeOf(cur).ToString() +
                     " but the model declares " + ShapeToString(out_shape));
  }
  ctx->EmitInto(Node{"Identity", n.name, {}, {cur}, n.outputs});
}

// Resize-18's `axes` names the axes scales/sizes cover, and `keep_aspect_ratio_policy` fits the
// sizes with one scale (which then also maps coordinates); both become full-rank scales/sizes.
void ResizeToFullRank(const Node& n, const std::vector<int64_t>& in, std::vector<double>* scales,
                      std::vector<int64_t>* sizes) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes(in.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (n.HasAttr("axes")) {
    axes = n.GetInts("axes");
    for (int64_t& a : axes) a = NormalizeAxis(n, a, r, "axes entry");
  }
  const bool by_sizes = !sizes->empty();
  const size_t given = by_sizes ? sizes->size() : scales->size();
  if (given != axes.size()) {
    NodeError(n, std::string(by_sizes ? "sizes" : "scales") + " holds " + std::to_string(given) +
                     " values, expected " + std::to_string(axes.size()) + " (one per axis of " +
                     ShapeToString(axes) + ")");
  }
  std::vector<double> full_scales(in.size(), 1.0);
  if (!by_sizes) {
    for (size_t i = 0; i < axes.size(); ++i) full_scales[axes[i]] = (*scales)[i];
    *scales = full_scales;
    return;
  }
  std::vector<int64_t> full_sizes = in;
  const std::string policy = n.GetString("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) full_sizes[axes[i]] = (*sizes)[i];
    scales->clear();
  } else if (policy == "not_larger" || policy == "not_smaller") {
    double s = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      if (in[axes[i]] == 0) {  // its ratio would be infinite (and s * 0 NaN); it stays empty
        NodeError(n, "keep_aspect_ratio_policy '" + policy +
                         "' needs the input's extent along axis " + std::to_string(axes[i]) +
                         " to be > 0, got " + ShapeToString(in));
      }
      double ratio = static_cast<double>((*sizes)[i]) / static_cast<double>(in[axes[i]]);
      s = policy == "not_larger" ? std::min(s, ratio) : std::max(s, ratio);
    }
    for (int64_t a : axes) {
      full_sizes[a] = static_cast<int64_t>(std::round(s * static_cast<double>(in[a])));
      full_scales[a] = s;
    }
    *scales = full_scales;
  } else {
    NodeError(n, "keep_aspect_ratio_policy '" + policy +
                     "' is not valid (valid: stretch, not_larger, not_smaller)");
  }
  *sizes = full_sizes;
}

void ResizeOp(Node& n, bool upsample, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs[0]);
  int64_t r = x.ndim();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  std::string mode = n.GetString("mode", "nearest");
  if (upsample) {
    if (ctx->opset() >= 9) {
      scales = ctx->ConstInput(n, 1, "scales")->ToDoubleVector();
    } else {
      scales = n.GetFloats("scales");
    }
    n.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
    n.attrs["nearest_mode"] = std::string("floor");
    if (mode == "bilinear") mode = "linear";
    n.op = "Resize";
  } else if (ctx->opset() < 11) {
    scales = ctx->ConstInput(n, 1, "scales")->ToDoubleVector();
    n.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
    n.attrs["nearest_mode"] = std::string("floor");
  } else {
    if (n.HasInput(1) && ctx->ConstInput(n, 1, "roi")->NumElements() > 0 &&
        n.GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
      NodeUnsupported(n, "coordinate_transformation_mode tf_crop_and_resize is not supported");
    }
    if (n.HasInput(2)) scales = ctx->ConstInput(n, 2, "scales")->ToDoubleVector();
    if (n.HasInput(3)) sizes = ctx->ConstInput(n, 3, "sizes")->ToIntVector();
    ResizeToFullRank(n, x.shape, &scales, &sizes);
  }
  std::vector<int64_t> out = x.shape;
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != r) NodeError(n, "sizes length != rank");
    if (scales.empty()) {  // sizes alone: each axis scales by out / in
      for (int64_t i = 0; i < r; ++i) {
        scales.push_back(static_cast<double>(sizes[i]) / static_cast<double>(x.shape[i]));
      }
    }
    out = sizes;
  } else {
    if (static_cast<int64_t>(scales.size()) != r) NodeError(n, "scales length != rank");
    for (int64_t i = 0; i < r; ++i) {
      out[i] = static_cast<int64_t>(std::floor(static_cast<double>(x.shape[i]) * scales[i]));
    }
  }
  ctx->DropInputsFrom(n, 1);
  AttrMap a;
  a["mode"] = mode;
  a["coordinate_transformation_mode"] = n.GetString("coordinate_transformation_mode", "half_pixel");
  a["nearest_mode"] = n.GetString("nearest_mode", "round_prefer_floor");
  a["cubic_coeff_a"] = n.GetFloat("cubic_coeff_a", -0.75);
  a["exclude_outside"] = n.GetInt("exclude_outside", 0);
  a["extrapolation_value"] = n.GetFloat("extrapolation_value", 0.0);
  a["scales"] = scales;
  a["__out_shape"] = out;
  n.attrs = a;
}

// Resize (any opset) and Upsample: constant scales or sizes become the canonical Resize; scales
// computed at run time become index math (ResizeAtRunTime).
void CanonicalizeResize(Node n, bool upsample, CanonicalizeContext* ctx) {
  if (n.GetInt("antialias", 0) != 0) {
    NodeUnsupported(n, "antialias=1 is not supported (only antialias=0)");
  }
  bool legacy = upsample || ctx->opset() < 11;
  size_t si = legacy ? 1 : 2;
  bool runtime_scales = (!upsample || ctx->opset() >= 9) && n.HasInput(si) &&
                        !ctx->graph().value(n.inputs[si]).is_constant() && !n.HasInput(3);
  if (runtime_scales && (n.HasAttr("axes") || n.HasAttr("keep_aspect_ratio_policy"))) {
    NodeUnsupported(n, "axes / keep_aspect_ratio_policy need constant scales or sizes");
  }
  if (runtime_scales) {
    ResizeAtRunTime(n, upsample, ctx);
    return;
  }
  ResizeOp(n, upsample, ctx);

  ctx->EmitInto(std::move(n));
}

void ResizeRule(Node n, CanonicalizeContext* ctx) { CanonicalizeResize(std::move(n), false, ctx); }
void UpsampleRule(Node n, CanonicalizeContext* ctx) { CanonicalizeResize(std::move(n), true, ctx); }

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Resize", ResizeRule);
EMBER_REGISTER_OP_CANONICALIZE("Upsample", UpsampleRule);

}  // namespace compiler
}  // namespace ember
