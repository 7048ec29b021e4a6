// GridSample (4-D): each output pixel samples the input at the grid's (x, y), given in [-1, 1]
// across the input's width and height, by nearest (half to even), bilinear or bicubic (a =
// -0.75) interpolation. Every pixel an interpolation reads outside the image is zero, the
// nearest border pixel, or the pixel reflected at the border (at the outer pixels' centres with
// align_corners, else half a pixel further), as ONNX Runtime computes it.
#include <cmath>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

struct Axis {
  int64_t size;
  Expr lo, hi;  // the sampling border: [0, size - 1] with align_corners, else [-0.5, size - 0.5]
};

Expr F(double v) { return te::Const(te::Float(32), v); }

// g in [-1, 1] to a pixel coordinate along an axis of `size`.
Expr Unnormalize(const Expr& g, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  if (align_corners) return (g + F(1)) * F(0.5) * F(s - 1);
  return ((g + F(1)) * F(s) - F(1)) * F(0.5);
}

// x reflected into [lo, hi] as often as it takes (a mirror at each end).
Expr Reflect(const Expr& x, const Axis& a) {
  Expr range = a.hi - a.lo;
  auto fold = [&](const Expr& past, const Expr& near, const Expr& far, bool from_low) {
    Expr turns = te::Floor(past / range);
    Expr r = past - turns * range;
    Expr even = te::FloorMod(te::Cast(te::Index(), turns), Expr(2)) == 0;
    Expr to_near = from_low ? near + r : near - r;
    Expr to_far = from_low ? far - r : far + r;
    return te::Select(even, to_near, to_far);
  };
  return te::Select(x < a.lo, fold(a.lo - x, a.lo, a.hi, true),
                    te::Select(x > a.hi, fold(x - a.hi, a.hi, a.lo, false), x));
}

class Sampler {
 public:
  Sampler(const Node& n, const Tensor& x, const std::vector<Expr>& out_index)
      : x_(x), i_(out_index) {
    const bool align = n.GetInt("align_corners") != 0;
    padding_ = n.GetString("padding_mode");
    for (int d = 0; d < 2; ++d) {  // 0: height (y), 1: width (x)
      const int64_t size = x.shape()[2 + d];
      axes_[d] =
          Axis{size, align ? F(0) : F(-0.5),
               align ? F(static_cast<double>(size - 1)) : F(static_cast<double>(size) - 0.5)};
    }
    align_corners_ = align;
  }

  // The sampling location along axis d (0: y, 1: x) from the grid's value g.
  Expr Locate(const Expr& g, int d, bool round) const {
    Expr c = Unnormalize(g, axes_[d].size, align_corners_);
    return round ? te::Round(c) : c;
  }

  // Input pixel (row, col), integer indices that may lie outside: zero, the border pixel or the
  // reflected one by the padding mode (every load in bounds).
  Expr Pixel(const Expr& row, const Expr& col) const {
    Expr r = row, c = col;
    if (padding_ == "reflection") {
      r = te::Cast(te::Index(), Reflect(te::Cast(te::Float(32), row), axes_[0]));
      c = te::Cast(te::Index(), Reflect(te::Cast(te::Float(32), col), axes_[1]));
    }
    Expr rc = te::Min(te::Max(r, Expr(0)), Expr(axes_[0].size - 1));
    Expr cc = te::Min(te::Max(c, Expr(0)), Expr(axes_[1].size - 1));
    Expr v = te::Cast(te::Float(32), x_({i_[0], i_[1], rc, cc}));
    if (padding_ != "zeros") return v;
    Expr inside = (r >= 0) && (r < axes_[0].size) && (c >= 0) && (c < axes_[1].size);
    return te::Select(inside, v, F(0));
  }

 private:
  const Tensor& x_;
  const std::vector<Expr>& i_;
  Axis axes_[2];
  std::string padding_;
  bool align_corners_ = false;
};

// Keys' cubic convolution weights of the four taps around a point t past the second.
std::vector<Expr> CubicWeights(const Expr& t) {
  const double a = -0.75;
  Expr t1 = t + F(1), t2 = F(1) - t, t3 = F(2) - t;
  return {((F(a) * t1 - F(5 * a)) * t1 + F(8 * a)) * t1 - F(4 * a),
          ((F(a + 2) * t - F(a + 3)) * t) * t + F(1), ((F(a + 2) * t2 - F(a + 3)) * t2) * t2 + F(1),
          ((F(a) * t3 - F(5 * a)) * t3 + F(8 * a)) * t3 - F(4 * a)};
}

std::vector<Tensor> GridSample(const Node& n, const std::vector<Tensor>& in,
                               const std::vector<TensorType>& out) {
  const Tensor& x = In(n, in, 0);
  const Tensor& grid = In(n, in, 1);
  const std::string mode = n.GetString("mode");
  return {te::Compute(
      out.at(0).shape,
      [&](const std::vector<Expr>& i) {
        Sampler s(n, x, i);
        Expr gx = te::Cast(te::Float(32), grid({i[0], i[2], i[3], Expr(0)}));
        Expr gy = te::Cast(te::Float(32), grid({i[0], i[2], i[3], Expr(1)}));
        const bool nearest = mode == "nearest";
        Expr px = s.Locate(gx, 1, nearest), py = s.Locate(gy, 0, nearest);
        Expr v;
        if (nearest) {
          v = s.Pixel(te::Cast(te::Index(), py), te::Cast(te::Index(), px));
        } else if (mode == "bilinear") {
          Expr fx = te::Floor(px), fy = te::Floor(py);
          Expr dx = px - fx, dy = py - fy;
          Expr c0 = te::Cast(te::Index(), fx), r0 = te::Cast(te::Index(), fy);
          Expr top = s.Pixel(r0, c0) * (F(1) - dx) + s.Pixel(r0, c0 + 1) * dx;
          Expr bottom = s.Pixel(r0 + 1, c0) * (F(1) - dx) + s.Pixel(r0 + 1, c0 + 1) * dx;
          v = top * (F(1) - dy) + bottom * dy;
        } else {  // bicubic: 4 x 4 taps from (floor - 1)
          Expr fx = te::Floor(px), fy = te::Floor(py);
          std::vector<Expr> wx = CubicWeights(px - fx), wy = CubicWeights(py - fy);
          Expr c0 = te::Cast(te::Index(), fx) - 1, r0 = te::Cast(te::Index(), fy) - 1;
          for (int h = 0; h < 4; ++h) {
            Expr row;
            for (int w = 0; w < 4; ++w) {
              Expr t = s.Pixel(r0 + h, c0 + w) * wx[w];
              row = row.defined() ? row + t : t;
            }
            v = v.defined() ? v + row * wy[h] : row * wy[h];
          }
        }
        return te::Cast(x.dtype(), v);
      },
      n.name + "_out")};
}

const bool kRegistered = [] {
  OpRegistry::Global()->Mutable("GridSample").set_compute(GridSample);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
