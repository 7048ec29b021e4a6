// Compute rules of Conv, ConvTranspose, pooling, Gemm and MatMul. Attributes follow the
// canonical form (canonical_ops.h): pads/strides/dilations/kernel_shape are always present.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/window_attrs.h>
#include <ember/compiler/ir/winograd.h>

#include <algorithm>
#include <numeric>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using te::IterVar;

// Flat element `flat` of a tensor of `shape` as one index per axis.
std::vector<Expr> SplitFlat(Expr flat, const std::vector<int64_t>& shape) {
  std::vector<Expr> idx(shape.size());
  for (size_t d = shape.size() - 1; d > 0; --d) {
    idx[d] = te::FloorMod(flat, Expr(shape[d]));
    flat = te::FloorDiv(flat, Expr(shape[d]));
  }
  idx[0] = flat;
  return idx;
}

// Where weight element `wi` (OIHW) sits when PackConvWeights stored the constant blocked as
// [O/B][I/X][H][W][X][B] (X = 1 without kPackedWeightIcBlockAttr) under its OIHW shape: the
// blocked flat position, split on the OIHW shape.
std::vector<Expr> PackedWeightIndex(const Node& n, const std::vector<int64_t>& shape,
                                    const std::vector<Expr>& wi) {
  const int64_t block = n.GetInt(kPackedWeightBlockAttr, 0);
  if (block <= 1) return wi;
  const int64_t ic_block = std::max<int64_t>(1, n.GetInt(kPackedWeightIcBlockAttr, 1));
  Expr taps = 0;  // position inside one (output, input) channel pair's kernel
  int64_t per_pair = 1;
  for (size_t d = 2; d < shape.size(); ++d) {
    taps = taps * shape[d] + wi[d];
    per_pair *= shape[d];
  }
  Expr outer = (te::FloorDiv(wi[0], Expr(block)) * (shape[1] / ic_block) +
                te::FloorDiv(wi[1], Expr(ic_block))) *
                   per_pair +
               taps;
  Expr flat = (outer * ic_block + te::FloorMod(wi[1], Expr(ic_block))) * block +
              te::FloorMod(wi[0], Expr(block));
  return SplitFlat(flat, shape);
}

// R[k][col] of the transform's recovery matrix for kernel row or column k (an expression in
// 0..2); undefined when that column of R is zero.
Expr RecoveryCoeff(const WinogradTransform& t, const Expr& k, int64_t col) {
  Expr c;
  for (int64_t r = 0; r < 3; ++r) {
    const double v = t.recover[r * t.alpha + col];
    if (v == 0) continue;
    c = te::Select(k == Expr(r), te::Const(te::Float(32), v),
                   c.defined() ? c : te::Const(te::Float(32), 0));
  }
  return c;
}

// Weight element wi (OIHW) of a conv whose constant holds the Winograd-transformed kernels
// (kWinogradTileAttr): g = R U R^T from the transformed kernel U stored as [a^2][O/B][I][B].
// Only a conv no Winograd kernel took reads it so (and host evaluation): 9 loads per element.
Expr WinogradWeight(const Node& n, const Tensor& w, const std::vector<Expr>& wi) {
  const int64_t tile = n.GetInt(kWinogradTileAttr, 0), block = n.GetInt(kWinogradBlockAttr, 0);
  const WinogradTransform* t = FindWinogradTransform(tile);
  const int64_t oc = w.shape()[0], ic = w.shape()[1];
  if (t == nullptr || block <= 0 || oc % block != 0 || w.shape()[2] != t->alpha ||
      w.shape()[3] != t->alpha) {
    Fail(n, "Winograd weights: expected " + std::string(kWinogradTileAttr) + " 2 or 4, " +
                kWinogradBlockAttr + " dividing the output channels and W [OC][IC][tile + 2]" +
                "[tile + 2], got tile " + std::to_string(tile) + ", block " +
                std::to_string(block) + ", W " + ShapeToString(w.shape()));
  }
  const int64_t a = t->alpha;
  Expr sum;
  for (int64_t p = 0; p < a; ++p) {
    for (int64_t q = 0; q < a; ++q) {
      Expr rp = RecoveryCoeff(*t, wi[2], p), rq = RecoveryCoeff(*t, wi[3], q);
      if (!rp.defined() || !rq.defined()) continue;
      Expr flat =
          (((p * a + q) * (oc / block) + te::FloorDiv(wi[0], Expr(block))) * ic + wi[1]) * block +
          te::FloorMod(wi[0], Expr(block));
      Expr term = rp * rq * w(SplitFlat(flat, w.shape()));
      sum = sum.defined() ? sum + term : term;
    }
  }
  return sum;
}

Tensor ConvNchw(const Node& n, const Tensor& x, const Tensor& w, const Tensor& bias,
                const Tensor& zero_point_input, const std::vector<int64_t>& oshape) {
  size_t spatial = static_cast<size_t>(x.ndim() - 2);
  std::vector<int64_t> kdef(w.shape().begin() + 2, w.shape().end());
  const WindowAttrs win = WindowAttrs::Of(n, spatial, kdef);
  const bool winograd = n.HasAttr(kWinogradTileAttr);
  const int64_t group = win.group;
  int64_t cin = x.shape()[1];
  int64_t cout = w.shape()[0];
  if (group <= 0 || cin % group != 0 || cout % group != 0 || w.shape()[1] != cin / group) {
    Fail(n, "channels do not match group " + std::to_string(group));
  }
  int64_t icg = cin / group, ocg = cout / group;
  std::vector<IterVar> axes;
  IterVar rc = te::ReduceAxis(icg, "rc");
  axes.push_back(rc);
  std::vector<IterVar> rk;
  for (size_t d = 0; d < spatial; ++d) {
    rk.push_back(te::ReduceAxis(win.kernel[d], "rk" + std::to_string(d)));
    axes.push_back(rk.back());
  }
  // An integer conv's 8-bit operands as int32, the data shifted by its zero point (padding is
  // zero after the shift).
  const bool integer = x.dtype() == te::UInt(8) || x.dtype() == te::Int(8);
  if (integer && n.HasAttr(kPackedInt8WeightAttr)) {
    Fail(n, "its weights are packed for the int8 kernel (" + std::string(kPackedInt8WeightAttr) +
                "), which is the only one that reads them");
  }
  Expr zero_point = te::Const(te::Int(32), n.GetInt(kDataZeroPointAttr, 0));
  if (zero_point_input.defined()) {
    zero_point = te::Cast(te::Int(32),
                          zero_point_input(std::vector<Expr>(zero_point_input.ndim(), Expr(0))));
  }
  auto shifted = [&](const Expr& v) { return integer ? te::Cast(te::Int(32), v) - zero_point : v; };
  Tensor xp = x;
  if (integer) {
    xp = te::Compute(
        x.shape(), [&](const std::vector<Expr>& i) { return shifted(x(i)); }, n.name + "_shift");
  }
  // Padding is materialised once so the reduction's inner loop reads without bounds checks.
  bool padded = false;
  std::vector<int64_t> pshape = x.shape();
  for (size_t d = 0; d < spatial; ++d) {
    int64_t need =
        (oshape[2 + d] - 1) * win.strides[d] + (win.kernel[d] - 1) * win.dilations[d] + 1;
    pshape[2 + d] = std::max(x.shape()[2 + d] + win.pads[d], need);
    if (win.pads[d] > 0 || pshape[2 + d] > x.shape()[2 + d]) padded = true;
  }
  if (padded) {
    xp = te::ComputeMaterialized(
        pshape,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi = {i[0], i[1]};
          Expr inside;
          for (size_t d = 0; d < spatial; ++d) {
            Expr pos = i[2 + d] - win.pads[d];
            xi.push_back(pos);
            Expr ok = (pos >= 0) && (pos < x.shape()[2 + d]);
            inside = inside.defined() ? (inside && ok) : ok;
          }
          return te::Select(inside, shifted(x(xi)),
                            te::Const(integer ? te::Int(32) : x.dtype(), 0));
        },
        n.name + "_pad");
  }
  Tensor conv = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        Expr ic = rc.var;
        if (group > 1) ic = (i[1] / ocg) * icg + rc.var;
        std::vector<Expr> xi = {i[0], ic};
        std::vector<Expr> wi = {i[1], rc.var};
        for (size_t d = 0; d < spatial; ++d) {
          xi.push_back(i[2 + d] * win.strides[d] + rk[d].var * win.dilations[d]);
          wi.push_back(rk[d].var);
        }
        Expr weight = winograd ? WinogradWeight(n, w, wi) : w(PackedWeightIndex(n, w.shape(), wi));
        if (integer) weight = te::Cast(te::Int(32), weight);
        return te::Sum(xp(xi) * weight, axes);
      },
      n.name + "_conv");
  if (!bias.defined()) return conv;
  return te::Compute(
      oshape, [&](const std::vector<Expr>& i) { return conv(i) + bias({i[1]}); }, n.name + "_out");
}

// Conv in any pair of data/output layouts (ember/compiler/ir/layout.h): the NCHW reference over
// views of the blocked tensors.
Tensor Conv(const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
  const int64_t in_block = LayoutBlock(n.GetString(kDataLayoutAttr, "NCHW"));
  const int64_t out_block = LayoutBlock(n.GetString(kOutLayoutAttr, "NCHW"));
  Tensor x = UnblockedView(In(n, in, 0), in_block, n.name + "_nchw_in");
  Tensor bias = in.size() > 2 ? in[2] : Tensor();
  Tensor zero_point = in.size() > kDataZeroPointInput ? in[kDataZeroPointInput] : Tensor();
  if (out_block == 0) return ConvNchw(n, x, In(n, in, 1), bias, zero_point, out.at(0).shape);
  return BlockedView(
      ConvNchw(n, x, In(n, in, 1), bias, zero_point, UnblockedShape(out.at(0).shape)), out_block,
      n.name + "_blocked");
}

Tensor ConvTranspose(const Node& n, const std::vector<Tensor>& in,
                     const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& w = In(n, in, 1);  // [Cin, Cout/group, k...]
  Tensor bias = in.size() > 2 ? in[2] : Tensor();
  size_t spatial = static_cast<size_t>(x.ndim() - 2);
  std::vector<int64_t> kdef(w.shape().begin() + 2, w.shape().end());
  const WindowAttrs win = WindowAttrs::Of(n, spatial, kdef);
  const int64_t group = win.group;
  int64_t cin = x.shape()[1];
  int64_t ocg = w.shape()[1];
  if (group <= 0 || cin % group != 0) Fail(n, "channels do not match group");
  int64_t icg = cin / group;
  IterVar rc = te::ReduceAxis(icg, "rc");
  std::vector<IterVar> axes = {rc};
  std::vector<IterVar> rk;
  for (size_t d = 0; d < spatial; ++d) {
    rk.push_back(te::ReduceAxis(w.shape()[2 + d], "rk" + std::to_string(d)));
    axes.push_back(rk.back());
  }
  const std::vector<int64_t>& oshape = out.at(0).shape;
  Tensor conv = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        Expr g = group > 1 ? i[1] / ocg : Expr(0);
        Expr ic = group > 1 ? g * icg + rc.var : rc.var;
        Expr oc_in_g = group > 1 ? te::Mod(i[1], Expr(ocg)) : i[1];
        std::vector<Expr> xi = {i[0], ic};
        std::vector<Expr> wi = {ic, oc_in_g};
        Expr cond;
        for (size_t d = 0; d < spatial; ++d) {
          // o = in * stride - pad + k * dil  =>  in = (o + pad - k * dil) / stride
          Expr num = i[2 + d] + win.pads[d] - rk[d].var * win.dilations[d];
          Expr pos = te::FloorDiv(num, Expr(win.strides[d]));
          Expr ok = (num >= 0) && (pos < x.shape()[2 + d]);
          if (win.strides[d] > 1) ok = ok && (te::FloorMod(num, Expr(win.strides[d])) == 0);
          cond = cond.defined() ? (cond && ok) : ok;
          xi.push_back(pos);
          wi.push_back(rk[d].var);
        }
        Expr v = x(xi) * w(wi);
        return te::Sum(te::Select(cond, v, te::Const(v.dtype(), 0)), axes);
      },
      n.name + "_convt");
  if (!bias.defined()) return conv;
  return te::Compute(
      oshape, [&](const std::vector<Expr>& i) { return conv(i) + bias({i[1]}); }, n.name + "_out");
}

// Number of kernel taps k in [0, K) with lo <= start + k*dil < hi (start may be negative).
Expr TapCount(Expr start, int64_t K, int64_t dil, int64_t lo, int64_t hi) {
  // kmin = ceil((lo - start) / dil) clamped at 0; kmax = floor((hi - 1 - start) / dil) at K-1
  Expr kmin = te::Max(Expr(0), -te::FloorDiv(start - lo, Expr(dil)));
  Expr kmax = te::Min(Expr(K - 1), te::FloorDiv(Expr(hi - 1) - start, Expr(dil)));
  return te::Max(Expr(0), kmax - kmin + 1);
}

Tensor Pool(const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& out,
            bool is_max) {
  const Tensor& x = In(n, in, 0);
  size_t spatial = static_cast<size_t>(x.ndim() - 2);
  const WindowAttrs win = WindowAttrs::Of(n, spatial);
  const bool include_pad = win.count_include_pad;
  std::vector<IterVar> rk;
  for (size_t d = 0; d < spatial; ++d) {
    rk.push_back(te::ReduceAxis(win.kernel[d], "rk" + std::to_string(d)));
  }
  const std::vector<int64_t>& oshape = out.at(0).shape;
  te::DataType t = x.dtype();
  Tensor red = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi = {i[0], i[1]};
        Expr cond;
        for (size_t d = 0; d < spatial; ++d) {
          Expr pos = i[2 + d] * win.strides[d] + rk[d].var * win.dilations[d] - win.pads[d];
          xi.push_back(pos);
          Expr ok = (pos >= 0) && (pos < x.shape()[2 + d]);
          cond = cond.defined() ? (cond && ok) : ok;
        }
        if (is_max) return te::ReduceMax(x(xi), rk, cond);
        return te::Sum(x(xi), rk, cond);
      },
      n.name + (is_max ? "_max" : "_sum"));
  if (is_max) return red;
  return te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        Expr count = 1;
        for (size_t d = 0; d < spatial; ++d) {
          Expr start = i[2 + d] * win.strides[d] - win.pads[d];
          int64_t lo = include_pad ? -win.pads[d] : 0;
          int64_t hi = include_pad ? x.shape()[2 + d] + win.pads[spatial + d] : x.shape()[2 + d];
          count = count * TapCount(start, win.kernel[d], win.dilations[d], lo, hi);
        }
        return red(i) / te::Cast(t, te::Max(count, Expr(1)));
      },
      n.name + "_out");
}

// MaxPool, plus its optional Indices output: the flat input position of each window's first
// maximum (row-major, or column-major over H, W when storage_order is 1).
std::vector<Tensor> MaxPoolWithIndices(const Node& n, const std::vector<Tensor>& in,
                                       const std::vector<TensorType>& out) {
  std::vector<Tensor> res = {Pool(n, in, out, true)};
  if (out.size() < 2 || n.outputs.size() < 2) return res;
  const Tensor& x = In(n, in, 0);
  size_t spatial = static_cast<size_t>(x.ndim() - 2);
  const WindowAttrs win = WindowAttrs::Of(n, spatial);
  bool col_major = n.GetInt("storage_order", 0) != 0;
  int64_t taps = 1;
  for (int64_t k : win.kernel) taps *= k;
  IterVar rk = te::ReduceAxis(taps, "rk");
  auto tap_pos = [&](const std::vector<Expr>& i, const Expr& r) {
    std::vector<Expr> pos;
    Expr rest = r;
    std::vector<Expr> k(spatial);
    for (int d = static_cast<int>(spatial) - 1; d >= 0; --d) {
      k[d] = d == 0 ? rest : te::Mod(rest, Expr(win.kernel[d]));
      rest = rest / win.kernel[d];
    }
    for (size_t d = 0; d < spatial; ++d) {
      pos.push_back(i[2 + d] * win.strides[d] + k[d] * win.dilations[d] - win.pads[d]);
    }
    return pos;
  };
  const std::vector<int64_t>& oshape = out.at(0).shape;
  Tensor arg = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> pos = tap_pos(i, rk.var);
        std::vector<Expr> xi = {i[0], i[1]};
        Expr cond;
        for (size_t d = 0; d < spatial; ++d) {
          xi.push_back(pos[d]);
          Expr ok = (pos[d] >= 0) && (pos[d] < x.shape()[2 + d]);
          cond = cond.defined() ? (cond && ok) : ok;
        }
        return te::Reduce(te::ReduceOp::kArgMax, x(xi), {rk}, cond);
      },
      n.name + "_argmax");
  res.push_back(te::Compute(
      out.at(1).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> pos = tap_pos(i, arg(i));
        Expr flat = i[0] * x.shape()[1] + i[1];
        if (col_major) {
          Expr sp = 0;
          for (int d = static_cast<int>(spatial) - 1; d >= 0; --d)
            sp = sp * x.shape()[2 + d] + pos[d];
          int64_t plane = 1;
          for (size_t d = 0; d < spatial; ++d) plane *= x.shape()[2 + d];
          flat = flat * plane + sp;
        } else {
          for (size_t d = 0; d < spatial; ++d) flat = flat * x.shape()[2 + d] + pos[d];
        }
        return te::Cast(te::Int(64), flat);
      },
      n.name + "_indices"));
  return res;
}

Tensor GlobalPool(const Node& n, const std::vector<Tensor>& in, bool is_max) {
  const Tensor& x = In(n, in, 0);
  std::vector<IterVar> rk;
  int64_t count = 1;
  std::vector<int64_t> oshape = {x.shape()[0], x.shape()[1]};
  for (int d = 2; d < x.ndim(); ++d) {
    rk.push_back(te::ReduceAxis(x.shape()[d], "rk" + std::to_string(d)));
    count *= x.shape()[d];
    oshape.push_back(1);
  }
  Tensor red = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi = {i[0], i[1]};
        for (auto& r : rk) xi.push_back(r.var);
        return is_max ? te::ReduceMax(x(xi), rk) : te::Sum(x(xi), rk);
      },
      n.name + (is_max ? "_max" : "_sum"));
  if (is_max) return red;
  return te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        return red(i) * te::Const(x.dtype(), 1.0 / static_cast<double>(count));
      },
      n.name + "_out");
}

// Element (row, col) of a [K][N] weight PackDenseWeights stored in panels of `width` columns:
// [N/width][K][width], then the last N % width columns as [K][N % width] (kPackedDenseWidthAttr).
Expr PackedDenseWeight(const Tensor& b, int64_t width, const Expr& row, const Expr& col) {
  const int64_t k = b.shape()[0], n = b.shape()[1], full = n / width * width;
  Expr in_panels =
      (te::FloorDiv(col, Expr(width)) * k + row) * width + te::FloorMod(col, Expr(width));
  Expr in_rest = full * k + row * (n - full) + (col - full);
  Expr flat = full == n ? in_panels : te::Select(col < Expr(full), in_panels, in_rest);
  return b({te::FloorDiv(flat, Expr(n)), te::FloorMod(flat, Expr(n))});
}

Tensor Gemm(const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
  const Tensor& a = In(n, in, 0);
  const Tensor& b = In(n, in, 1);
  Tensor c = in.size() > 2 ? in[2] : Tensor();
  bool ta = n.GetInt("transA", 0) != 0, tb = n.GetInt("transB", 0) != 0;
  double alpha = n.GetFloat("alpha", 1.0), beta = n.GetFloat("beta", 1.0);
  const int64_t packed_width = n.GetInt(kPackedDenseWidthAttr, 0);
  if (packed_width > 0 && (tb || b.ndim() != 2)) {
    throw CompileError(n.Describe() + ": " + kPackedDenseWidthAttr +
                       " needs transB = 0 and a 2-D weight");
  }
  int64_t k = ta ? a.shape()[0] : a.shape()[1];
  IterVar rk = te::ReduceAxis(k, "rk");
  const std::vector<int64_t>& oshape = out.at(0).shape;
  Tensor mm = te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        Expr av = ta ? a({rk.var, i[0]}) : a({i[0], rk.var});
        Expr bv = packed_width > 0 ? PackedDenseWeight(b, packed_width, rk.var, i[1])
                  : tb             ? b({i[1], rk.var})
                                   : b({rk.var, i[1]});
        return te::Sum(av * bv, {rk});
      },
      n.name + "_mm");
  if (alpha == 1.0 && (!c.defined() || beta == 0.0)) return mm;
  return te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        Expr v = mm(i);
        if (alpha != 1.0) v = v * te::Const(v.dtype(), alpha);
        if (c.defined() && beta != 0.0) {
          Expr cv = BroadcastLoad(c, i);
          if (beta != 1.0) cv = cv * te::Const(cv.dtype(), beta);
          v = v + cv;
        }
        return v;
      },
      n.name + "_out");
}

Tensor MatMul(const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
  const Tensor& a = In(n, in, 0);
  const Tensor& b = In(n, in, 1);
  const std::vector<int64_t>& oshape = out.at(0).shape;
  int ra = a.ndim(), rb = b.ndim(), ro = static_cast<int>(oshape.size());
  int64_t k = a.shape()[ra - 1];
  IterVar rk = te::ReduceAxis(k, "rk");
  return te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        // Output dims: batch..., [M if ra > 1], [N if rb > 1].
        int nb = ro - (ra > 1 ? 1 : 0) - (rb > 1 ? 1 : 0);
        std::vector<Expr> batch(i.begin(), i.begin() + nb);
        Expr m = ra > 1 ? i[nb] : Expr(0);
        Expr col = rb > 1 ? i[ro - 1] : Expr(0);
        std::vector<Expr> ai, bi;
        if (ra > 1) {
          int abatch = ra - 2;
          for (int d = 0; d < abatch; ++d) {
            ai.push_back(a.shape()[d] == 1 ? Expr(0) : batch[nb - abatch + d]);
          }
          ai.push_back(m);
        }
        ai.push_back(rk.var);
        if (rb > 1) {
          int bbatch = rb - 2;
          for (int d = 0; d < bbatch; ++d) {
            bi.push_back(b.shape()[d] == 1 ? Expr(0) : batch[nb - bbatch + d]);
          }
          bi.push_back(rk.var);
          bi.push_back(col);
        } else {
          bi.push_back(rk.var);
        }
        return te::Sum(a(ai) * b(bi), {rk});
      },
      n.name + "_out");
}

// MaxPool in NCHW, or in NCHW[x]c (data_layout; no Indices then): the NCHW rule over views.
std::vector<Tensor> MaxPoolInLayout(const Node& n, const std::vector<Tensor>& in,
                                    const std::vector<TensorType>& out) {
  const int64_t block = LayoutBlock(n.GetString(kDataLayoutAttr, "NCHW"));
  if (block == 0) return MaxPoolWithIndices(n, in, out);
  Tensor x = UnblockedView(In(n, in, 0), block, n.name + "_nchw_in");
  std::vector<TensorType> nchw_out{TensorType{UnblockedShape(out.at(0).shape), out.at(0).dtype}};
  return {BlockedView(Pool(n, {x}, nchw_out, true), block, n.name + "_blocked")};
}

// A global pool in NCHW, or in NCHW[x]c (data_layout): the NCHW rule over views.
Tensor GlobalPoolInLayout(const Node& n, const std::vector<Tensor>& in, bool is_max) {
  const int64_t block = LayoutBlock(n.GetString(kDataLayoutAttr, "NCHW"));
  if (block == 0) return GlobalPool(n, in, is_max);
  Tensor x = UnblockedView(In(n, in, 0), block, n.name + "_nchw_in");
  return BlockedView(GlobalPool(n, {x}, is_max), block, n.name + "_blocked");
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FCompute fn) { OpRegistry::Global()->Mutable(op).set_compute(fn); };
  reg("Conv", [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& o) {
    return std::vector<Tensor>{Conv(n, in, o)};
  });
  reg("ConvTranspose",
      [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& o) {
        return std::vector<Tensor>{ConvTranspose(n, in, o)};
      });
  reg("MaxPool", [](const Node& n, const std::vector<Tensor>& in,
                    const std::vector<TensorType>& o) { return MaxPoolInLayout(n, in, o); });
  reg("AveragePool",
      [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& o) {
        return std::vector<Tensor>{Pool(n, in, o, false)};
      });
  reg("GlobalMaxPool",
      [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>&) {
        return std::vector<Tensor>{GlobalPoolInLayout(n, in, true)};
      });
  reg("GlobalAveragePool",
      [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>&) {
        return std::vector<Tensor>{GlobalPoolInLayout(n, in, false)};
      });
  reg("Gemm", [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& o) {
    return std::vector<Tensor>{Gemm(n, in, o)};
  });
  reg("MatMul", [](const Node& n, const std::vector<Tensor>& in, const std::vector<TensorType>& o) {
    return std::vector<Tensor>{MatMul(n, in, o)};
  });
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
