// Compute rules of layout/indexing operators: reshape family, Transpose, Concat, Split, Slice,
// Gather, Tile, Expand, Pad, DepthToSpace/SpaceToDepth, PhaseInterleave, Resize.
#include <ember/compiler/ir/layout.h>

#include <cmath>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using Shape = std::vector<int64_t>;

// A run of output dims and the run of input dims holding the same elements, for a reshape: dims
// [out_begin, out_end) of the output and [in_begin, in_end) of the input.
struct ReshapeGroup {
  size_t out_begin, out_end, in_begin, in_end;
};

// The smallest runs of dims whose element counts agree, in order ([200,1,32] -> [200,1,1,32]:
// {200}->{200}, {1}->{1,1}, {32}->{32}). Unit dims join the run before them. Within a run an
// index is flattened and unflattened; across runs it passes through, so a reshape that adds or
// drops unit dims, or merges or splits some dims, leaves the others' indices plain (no divisions
// for later passes to see through: a Concat behind a Reshape is split by its axis only then).
std::vector<ReshapeGroup> ReshapeGroups(const Shape& in, const Shape& out) {
  std::vector<ReshapeGroup> groups;
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    ReshapeGroup g{o, o, i, i};
    int64_t in_count = 1, out_count = 1;
    // Take at least one dim from each side that has one left, then grow the smaller count.
    if (o < out.size()) out_count *= out[o++];
    if (i < in.size()) in_count *= in[i++];
    while (in_count != out_count) {
      if (out_count < in_count && o < out.size()) {
        out_count *= out[o++];
      } else if (i < in.size()) {
        in_count *= in[i++];
      } else {
        return {};  // counts never agree (a zero-size dim): one run of everything
      }
    }
    while (o < out.size() && out[o] == 1) ++o;
    while (i < in.size() && in[i] == 1) ++i;
    g.out_end = o;
    g.in_end = i;
    groups.push_back(g);
  }
  return groups;
}

// out[i] = x[unflatten(flatten(i))] run by run: any reshape of a compact tensor.
Tensor ReshapeTo(const Node& n, const Tensor& x, const Shape& oshape) {
  int64_t total = 1;
  for (int64_t d : oshape) total *= d;
  if (total != x.NumElements()) Fail(n, "reshape changes the element count");
  std::vector<ReshapeGroup> groups = ReshapeGroups(x.shape(), oshape);
  if (groups.empty()) groups.push_back({0, oshape.size(), 0, x.shape().size()});
  return te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi(x.shape().size());
        for (const ReshapeGroup& g : groups) {
          Expr flat = 0;
          for (size_t d = g.out_begin; d < g.out_end; ++d) {
            flat = oshape[d] == 1 ? flat : flat * oshape[d] + i[d];
          }
          // Unit dims take 0; the run's first other dim takes what is left of flat.
          size_t first = g.in_begin;
          while (first + 1 < g.in_end && x.shape()[first] == 1) ++first;
          for (size_t d = g.in_end; d-- > g.in_begin;) {
            const int64_t ext = x.shape()[d];
            if (d == first) {
              xi[d] = flat;
            } else if (ext == 1) {
              xi[d] = 0;
            } else {
              xi[d] = te::Mod(flat, Expr(ext));
              flat = flat / ext;
            }
          }
        }
        return x(xi);
      },
      n.name + "_out");
}

std::vector<Tensor> Reshape(const Node& n, const std::vector<Tensor>& in,
                            const std::vector<TensorType>& out) {
  return {ReshapeTo(n, In(n, in, 0), out.at(0).shape)};
}

std::vector<Tensor> Expand(const Node& n, const std::vector<Tensor>& in,
                           const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  return {te::Compute(
      out.at(0).shape, [&](const std::vector<Expr>& i) { return BroadcastLoad(x, i); },
      n.name + "_out")};
}

std::vector<Tensor> Transpose(const Node& n, const std::vector<Tensor>& in,
                              const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  std::vector<int64_t> perm;
  for (int d = x.ndim() - 1; d >= 0; --d) perm.push_back(d);
  perm = n.GetInts("perm", perm);
  if (static_cast<int>(perm.size()) != x.ndim()) Fail(n, "perm length differs from rank");
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi(perm.size());
        for (size_t d = 0; d < perm.size(); ++d) xi[perm[d]] = i[d];
        return x(xi);
      },
      n.name + "_out")};
}

std::vector<Tensor> Concat(const Node& n, const std::vector<Tensor>& in,
                           const std::vector<TensorType>& out) {
  const Shape& oshape = out.at(0).shape;
  int64_t axis = NormAxis(n, n.GetInt("axis"), static_cast<int64_t>(oshape.size()));
  std::vector<Tensor> parts;
  for (auto& t : in) {
    if (t.defined() && t.shape()[axis] > 0) parts.push_back(t);
  }
  if (parts.empty()) Fail(n, "no non-empty inputs");
  return {te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<int64_t> offs;
        int64_t off = 0;
        for (auto& p : parts) {
          offs.push_back(off);
          off += p.shape()[axis];
        }
        // Select chain from the last part backwards.
        auto load = [&](size_t k) {
          std::vector<Expr> pi = i;
          pi[axis] = i[axis] - offs[k];
          return parts[k](pi);
        };
        Expr v = load(parts.size() - 1);
        for (int k = static_cast<int>(parts.size()) - 2; k >= 0; --k) {
          v = te::Select(i[axis] < offs[k + 1], load(k), v);
        }
        return v;
      },
      n.name + "_out")};
}

std::vector<Tensor> Split(const Node& n, const std::vector<Tensor>& in,
                          const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  int64_t axis = NormAxis(n, n.GetInt("axis", 0), x.ndim());
  std::vector<Tensor> res;
  int64_t off = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t o = off;
    res.push_back(te::Compute(
        out[k].shape,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi = i;
          xi[axis] = i[axis] + o;
          return x(xi);
        },
        n.name + "_out" + std::to_string(k)));
    off += out[k].shape[axis];
  }
  return res;
}

std::vector<Tensor> Slice(const Node& n, const std::vector<Tensor>& in,
                          const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  Shape starts = n.GetInts("starts");
  Shape steps = n.GetInts("steps", Shape(starts.size(), 1));
  if (static_cast<int>(starts.size()) != x.ndim() || steps.size() != starts.size()) {
    Fail(n, "canonical Slice needs starts/steps for every dimension");
  }
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi;
        for (size_t d = 0; d < starts.size(); ++d) xi.push_back(i[d] * steps[d] + starts[d]);
        return x(xi);
      },
      n.name + "_out")};
}

std::vector<Tensor> Gather(const Node& n, const std::vector<Tensor>& in,
                           const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& idx = In(n, in, 1);
  int64_t axis = NormAxis(n, n.GetInt("axis", 0), x.ndim());
  int64_t q = idx.ndim();
  int64_t ext = x.shape()[axis];
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> ii(i.begin() + axis, i.begin() + axis + q);
        Expr k = ClampedIndex(idx(ii), ext);
        std::vector<Expr> xi(i.begin(), i.begin() + axis);
        xi.push_back(k);
        for (size_t d = axis + q; d < i.size(); ++d) xi.push_back(i[d]);
        return x(xi);
      },
      n.name + "_out")};
}

std::vector<Tensor> Tile(const Node& n, const std::vector<Tensor>& in,
                         const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi;
        for (int d = 0; d < x.ndim(); ++d) xi.push_back(te::Mod(i[d], Expr(x.shape()[d])));
        return x(xi);
      },
      n.name + "_out")};
}

std::vector<Tensor> Pad(const Node& n, const std::vector<Tensor>& in,
                        const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  Shape pads = n.GetInts("pads");
  std::string mode = n.GetString("mode", "constant");
  double value = n.GetFloat("value", 0.0);
  int r = x.ndim();
  if (static_cast<int>(pads.size()) != 2 * r) Fail(n, "pads must have 2*rank entries");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    Unsupported(n, "Pad mode '" + mode + "' (supported: constant, reflect, edge, wrap)");
  }
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> xi;
        Expr inside;
        for (int d = 0; d < r; ++d) {
          int64_t ext = x.shape()[d];
          Expr p = i[d] - pads[d];
          if (mode == "constant") {
            if (pads[d] > 0 || pads[r + d] > 0) {
              Expr ok = (p >= 0) && (p < ext);
              inside = inside.defined() ? (inside && ok) : ok;
            }
          } else if (mode == "edge") {
            p = te::Min(te::Max(p, Expr(0)), Expr(ext - 1));
          } else if (mode == "wrap") {
            // opset 19: circular padding, period ext
            if (ext > 0) p = te::FloorMod(p, Expr(ext));
          } else {
            // reflect without repeating the edge: period 2*(ext-1)
            if (ext == 1) {
              p = Expr(0);
            } else {
              int64_t period = 2 * (ext - 1);
              Expr m = te::FloorMod(p, Expr(period));
              p = te::Select(m < ext, m, Expr(period) - m);
            }
          }
          xi.push_back(p);
        }
        Expr v = x(xi);
        if (inside.defined()) v = te::Select(inside, v, te::Const(v.dtype(), value));
        return v;
      },
      n.name + "_out")};
}

std::vector<Tensor> DepthToSpace(const Node& n, const std::vector<Tensor>& in,
                                 const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  int64_t b = n.GetInt("blocksize");
  bool crd = n.GetString("mode", "DCR") == "CRD";
  int64_t c_out = out.at(0).shape[1];
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        Expr bh = te::Mod(i[2], Expr(b)), bw = te::Mod(i[3], Expr(b));
        Expr c = crd ? i[1] * (b * b) + bh * b + bw : (bh * b + bw) * c_out + i[1];
        return x({i[0], c, i[2] / b, i[3] / b});
      },
      n.name + "_out")};
}

std::vector<Tensor> SpaceToDepth(const Node& n, const std::vector<Tensor>& in,
                                 const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  int64_t b = n.GetInt("blocksize");
  int64_t c_in = x.shape()[1];
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        Expr blk = i[1] / c_in, c = te::Mod(i[1], Expr(c_in));
        Expr bh = blk / b, bw = te::Mod(blk, Expr(b));
        return x({i[0], c, i[2] * b + bh, i[3] * b + bw});
      },
      n.name + "_out")};
}

// out[n, g*cg + c, y, x] reads the conv output channel of phase (y' % sh, x' % sw) at
// (y' / sh, x' / sw), y' = y + crop[0], x' = x + crop[1]; a group's phases are adjacent. In
// NCHW[b]c a phase's channels are whole blocks, so lane l of a block reads lane l of a block.
std::vector<Tensor> PhaseInterleave(const Node& n, const std::vector<Tensor>& in,
                                    const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const auto s = n.GetInts("strides");
  const auto crop = n.GetInts("crop");
  const int64_t group = n.GetInt("group");
  const int64_t block = LayoutBlock(n.GetString(kDataLayoutAttr, "NCHW"));
  const int64_t phases = s[0] * s[1];
  // Channels (blocks, when blocked) of one group's phase.
  const int64_t cg = (block == 0 ? out.at(0).shape[1] : out.at(0).shape[1] * block) / group;
  const int64_t unit = block == 0 ? cg : cg / block;
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        Expr y = i[2] + crop[0], w = i[3] + crop[1];
        Expr phase = te::Mod(y, Expr(s[0])) * s[1] + te::Mod(w, Expr(s[1]));
        Expr c = phase * unit + te::Mod(i[1], Expr(unit));
        if (group > 1) c = c + i[1] / unit * (phases * unit);
        std::vector<Expr> xi{i[0], c, y / s[0], w / s[1]};
        if (block != 0) xi.push_back(i[4]);
        return x(xi);
      },
      n.name + "_out")};
}

std::vector<Tensor> Resize(const Node& n, const std::vector<Tensor>& in,
                           const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Shape& oshape = out.at(0).shape;
  int r = x.ndim();
  std::string mode = n.GetString("mode", "nearest");
  std::string ctm = n.GetString("coordinate_transformation_mode", "half_pixel");
  std::string nearest = n.GetString("nearest_mode", "round_prefer_floor");
  std::vector<double> scales = n.GetFloats("scales", {});
  if (static_cast<int>(scales.size()) != r) {
    scales.clear();
    for (int d = 0; d < r; ++d) {
      scales.push_back(static_cast<double>(oshape[d]) / static_cast<double>(x.shape()[d]));
    }
  }
  if (mode != "nearest" && mode != "linear" && mode != "cubic") {
    Unsupported(n, "Resize mode '" + mode + "' (supported: nearest, linear, cubic)");
  }
  if (ctm != "half_pixel" && ctm != "asymmetric" && ctm != "align_corners" &&
      ctm != "pytorch_half_pixel" && ctm != "tf_half_pixel_for_nn" &&
      ctm != "half_pixel_symmetric") {
    Unsupported(n, "coordinate_transformation_mode '" + ctm + "'");
  }
  te::DataType ft = te::Float(32);
  // Input coordinate (float) of output index i along dim d.
  auto coord = [&](const Expr& i, int d) -> Expr {
    double s = scales[d];
    int64_t in_len = x.shape()[d], out_len = oshape[d];
    Expr fi = te::Cast(ft, i);
    // Divide (not multiply by 1/s): x.5 boundaries must round the way the reference does.
    if (ctm == "asymmetric") return fi / te::Const(ft, s);
    if (ctm == "align_corners") {
      if (out_len == 1) return te::Const(ft, 0.0);
      return fi * te::Const(ft, static_cast<double>(in_len - 1)) /
             te::Const(ft, static_cast<double>(out_len - 1));
    }
    if (ctm == "pytorch_half_pixel" && out_len == 1) return te::Const(ft, 0.0);
    if (ctm == "tf_half_pixel_for_nn") return (fi + te::Const(ft, 0.5)) / te::Const(ft, s);
    if (ctm == "half_pixel_symmetric") {
      // Opset 19: centres the sampled window when the output size was rounded from in * scale.
      double adjustment = static_cast<double>(out_len) / (s * static_cast<double>(in_len));
      double offset = static_cast<double>(in_len) / 2.0 * (1.0 - adjustment);
      return te::Const(ft, offset) + (fi + te::Const(ft, 0.5)) / te::Const(ft, s) -
             te::Const(ft, 0.5);
    }
    return (fi + te::Const(ft, 0.5)) / te::Const(ft, s) - te::Const(ft, 0.5);
  };
  if (mode == "nearest") {
    return {te::Compute(
        oshape,
        [&](const std::vector<Expr>& i) {
          std::vector<Expr> xi;
          for (int d = 0; d < r; ++d) {
            if (oshape[d] == x.shape()[d] && scales[d] == 1.0) {
              xi.push_back(i[d]);
              continue;
            }
            Expr c = coord(i[d], d);
            Expr k;
            if (nearest == "floor") {
              k = te::Floor(c);
            } else if (nearest == "ceil") {
              k = te::Ceil(c);
            } else if (nearest == "round_prefer_ceil") {
              k = te::Floor(c + te::Const(ft, 0.5));
            } else {  // round_prefer_floor
              k = te::Ceil(c - te::Const(ft, 0.5));
            }
            Expr ki = te::Cast(te::Index(), k);
            xi.push_back(te::Min(te::Max(ki, Expr(0)), Expr(x.shape()[d] - 1)));
          }
          return x(xi);
        },
        n.name + "_out")};
  }
  // The dimensions cubic and linear interpolate along; the others are copied through.
  std::vector<int> dims;
  for (int d = 0; d < r; ++d) {
    if (!(oshape[d] == x.shape()[d] && scales[d] == 1.0)) dims.push_back(d);
  }
  if (mode == "cubic") {
    double a = n.GetFloat("cubic_coeff_a", -0.75);
    bool exclude = n.GetInt("exclude_outside", 0) != 0;
    return {te::Compute(
        oshape,
        [&](const std::vector<Expr>& i) {
          // Per resized dim: 4 taps at floor(c)-1 .. floor(c)+2 with Keys' cubic weights.
          std::vector<std::vector<Expr>> tap_idx(r), tap_w(r);
          for (int d : dims) {
            int64_t len = x.shape()[d];
            Expr c = coord(i[d], d);
            Expr f = te::Floor(c);
            Expr t = c - f;
            Expr base = te::Cast(te::Index(), f);
            auto A = [&](double v) { return te::Const(ft, v); };
            Expr t1 = t + A(1), t2 = A(1) - t, t3 = A(2) - t;
            std::vector<Expr> w = {((A(a) * t1 - A(5 * a)) * t1 + A(8 * a)) * t1 - A(4 * a),
                                   ((A(a + 2) * t - A(a + 3)) * t) * t + A(1),
                                   ((A(a + 2) * t2 - A(a + 3)) * t2) * t2 + A(1),
                                   ((A(a) * t3 - A(5 * a)) * t3 + A(8 * a)) * t3 - A(4 * a)};
            Expr wsum = A(0);
            for (int k = 0; k < 4; ++k) {
              Expr pos = base + (k - 1);
              if (exclude) {
                w[k] = te::Select((pos >= 0) && (pos < len), w[k], A(0));
                wsum = wsum + w[k];
              }
              tap_idx[d].push_back(te::Min(te::Max(pos, Expr(0)), Expr(len - 1)));
            }
            if (exclude) {
              for (auto& wk : w) wk = wk / wsum;
            }
            tap_w[d] = w;
          }
          Expr acc;
          int taps = 1;
          for (size_t k = 0; k < dims.size(); ++k) taps *= 4;
          for (int m = 0; m < taps; ++m) {
            std::vector<Expr> xi = i;
            Expr weight = te::Const(ft, 1.0);
            int rest = m;
            for (int d : dims) {
              int k = rest % 4;
              rest /= 4;
              xi[d] = tap_idx[d][k];
              weight = weight * tap_w[d][k];
            }
            Expr v = te::Cast(ft, x(xi)) * weight;
            acc = acc.defined() ? acc + v : v;
          }
          return te::Cast(x.dtype(), acc);
        },
        n.name + "_out")};
  }
  // linear: separable interpolation over every resized dimension
  return {te::Compute(
      oshape,
      [&](const std::vector<Expr>& i) {
        std::vector<Expr> lo(r), hi(r), w(r);
        for (int d : dims) {
          int64_t len = x.shape()[d];
          Expr c = coord(i[d], d);
          c = te::Max(c, te::Const(ft, 0.0));
          c = te::Min(c, te::Const(ft, static_cast<double>(len - 1)));
          Expr f = te::Floor(c);
          lo[d] = te::Cast(te::Index(), f);
          hi[d] = te::Min(lo[d] + 1, Expr(len - 1));
          w[d] = c - f;
        }
        Expr acc;
        int corners = 1 << dims.size();
        for (int m = 0; m < corners; ++m) {
          std::vector<Expr> xi = i;
          Expr weight = te::Const(ft, 1.0);
          for (size_t k = 0; k < dims.size(); ++k) {
            int d = dims[k];
            bool up = (m >> k) & 1;
            xi[d] = up ? hi[d] : lo[d];
            weight = weight * (up ? w[d] : te::Const(ft, 1.0) - w[d]);
          }
          Expr v = te::Cast(ft, x(xi)) * weight;
          acc = acc.defined() ? acc + v : v;
        }
        return te::Cast(x.dtype(), acc);
      },
      n.name + "_out")};
}

// NCHW <-> NCHW[x]c (the shape rule checked the layouts).
std::vector<Tensor> LayoutTransform(const Node& n, const std::vector<Tensor>& in,
                                    const std::vector<TensorType>&) {
  const Tensor& x = In(n, in, 0);
  const int64_t src = LayoutBlock(n.GetString(kSrcLayoutAttr));
  const int64_t dst = LayoutBlock(n.GetString(kDstLayoutAttr));
  return {dst > 0 ? BlockedView(x, dst, n.name + "_out") : UnblockedView(x, src, n.name + "_out")};
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FCompute fn) { OpRegistry::Global()->Mutable(op).set_compute(fn); };
  reg("LayoutTransform", LayoutTransform);
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) reg(op, Reshape);
  reg("Expand", Expand);
  reg("Transpose", Transpose);
  reg("Concat", Concat);
  reg("Split", Split);
  reg("Slice", Slice);
  reg("Gather", Gather);
  OpRegistry::Global()->Mutable("Gather").set_runtime_indices(
      [](const Node& n, const std::vector<TensorType>& in) {
        return std::vector<RunTimeIndexRange>{IndicesIntoAxis(in.at(0).shape, n.GetInt("axis"))};
      });
  reg("Tile", Tile);
  reg("Pad", Pad);
  reg("DepthToSpace", DepthToSpace);
  reg("SpaceToDepth", SpaceToDepth);
  reg("PhaseInterleave", PhaseInterleave);
  reg("Resize", Resize);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
