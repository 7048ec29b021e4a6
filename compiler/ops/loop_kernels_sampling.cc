// Loop rules (OpDef::loop_kernel) of the ops that read an image at places computed at run time or
// add values back into one: Col2Im (columns folded back), RoiAlign (bilinear samples in boxes)
// and DeformableColumns (DeformConv's bilinear samples at learned offsets). Loads stay inside
// their buffers whatever the data: coordinates are clamped before they become indices.
#include <algorithm>
#include <string>
#include <vector>

#include "ember/compiler/lower.h"
#include "ir/shape_util.h"
#include "loop_kernel_util.h"
#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;

// Col2Im: row (c, k) of the columns holds, at sliding position l, the value at offset k of the
// block (block_shape, row-major) placed at l; each is added to the image pixel it covers, those
// in the padding dropped. Image planes run in parallel.
Stmt Col2Im(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
            lower::LoweredFunc*) {
  const Buffer &x = in.at(0), &y = out.at(0);
  const std::vector<int64_t> image = n.GetInts("image_shape"), block = n.GetInts("block_shape"),
                             d = n.GetInts("dilations"), p = n.GetInts("pads"),
                             s = n.GetInts("strides");
  const size_t r = image.size();
  int64_t blocks = 1, pixels = 1;
  for (size_t i = 0; i < r; ++i) {
    blocks *= block[i];
    pixels *= image[i];
  }
  const int64_t positions = InputType(n, 0).shape.at(2), planes = y->size / pixels;
  Expr plane = te::MakeVar("plane"), k = te::MakeVar("k"), l = te::MakeVar("l");
  Expr inside = te::Const(te::Bool(), 1), at = 0, k_rest = k, l_rest = l;
  for (size_t i = r; i-- > 0;) {  // the last axis varies fastest in both k and l
    const int64_t slides = (image[i] + p[i] + p[r + i] - d[i] * (block[i] - 1) - 1) / s[i] + 1;
    Expr pos = te::FloorMod(l_rest, Expr(slides)) * s[i] - p[i] +
               te::FloorMod(k_rest, Expr(block[i])) * d[i];
    k_rest = te::FloorDiv(k_rest, Expr(block[i]));
    l_rest = te::FloorDiv(l_rest, Expr(slides));
    inside = inside && pos >= Expr(0) && pos < Expr(image[i]);
    int64_t stride = 1;
    for (size_t j = i + 1; j < r; ++j) stride *= image[j];
    at = at + pos * stride;
  }
  Expr target = plane * pixels + at;
  Stmt add = lower::If(
      inside,
      lower::Store(y, target,
                   BufferLoad(y, target) + BufferLoad(x, (plane * blocks + k) * positions + l)));
  Expr e = te::MakeVar("e");
  return lower::Seq(
      {lower::For(e, y->size, ForKind::kVectorized, lower::Store(y, e, te::Const(y->dtype, 0))),
       lower::For(plane, planes, RowsLoop(planes, x->size),
                  lower::For(k, blocks, ForKind::kSerial,
                             lower::For(l, positions, ForKind::kSerial, add)))});
}

// RoiAlign's batch_indices: images of the batch.
RunTimeIndexRange BatchImages(int64_t images) {
  RunTimeIndexRange r;
  r.extent = images;
  r.non_negative = true;
  r.input = "batch_indices";
  r.what = "an image outside 0.." + std::to_string(images - 1) + " (the batch)";
  return r;
}

// RoiAlign: output bin (ph, pw) of roi r is the mean (or max) of a grid of bilinear samples of
// channel c of the roi's image, as Mask R-CNN defines them: a sample more than a pixel outside the
// map weighs 0, one past the last row or column reads it; max mode keeps the largest of each
// sample's four weighted corners (ONNX's reference and ORT). The grid is sampling_ratio on a side,
// or with sampling_ratio 0 ceil(bin size) for each roi, a number known only at run time: then
// the loops cover a window of 2 * size + 3 samples from the first within a pixel of the map (the
// samples are at least half a pixel apart, so none that reads the map is left out) and the rest
// count as the zeros they are. rois run in parallel.
Stmt RoiAlign(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
              lower::LoweredFunc* f) {
  const Buffer &x = in.at(0), &rois = in.at(1), &images = in.at(2), &y = out.at(0);
  const std::vector<int64_t>& xs = InputType(n, 0).shape;
  const int64_t channels = xs[1], h = xs[2], w = xs[3], count = rois->size / 4;
  const int64_t oh = n.GetInt("output_height"), ow = n.GetInt("output_width");
  const int64_t ratio = n.GetInt("sampling_ratio");
  const bool adaptive = ratio == 0, max = n.GetString("mode") == "max";
  const bool half = n.GetInt("half_pixel") != 0;
  const te::DataType t = x->dtype;
  auto c_ = [&](double v) { return te::Const(t, v); };
  auto as_t = [&](const Expr& i) { return Expr(te::Cast(t, i)); };
  Expr r = te::MakeVar("r"), c = te::MakeVar("c"), ph = te::MakeVar("ph"), pw = te::MakeVar("pw"),
       iy = te::MakeVar("iy"), ix = te::MakeVar("ix");
  const Buffer acc = AddLocal(f, n.name + "_acc", t), seen = AddLocal(f, n.name + "_seen", t);
  auto corner = [&](int k) {
    return BufferLoad(rois, r * 4 + k) * c_(n.GetFloat("spatial_scale")) - c_(half ? 0.5 : 0.0);
  };
  // One side of the bins (k = 1: rows, 0: columns): the sample coordinate of loop variable i,
  // whether i is one of the grid's, and the grid's size.
  struct Side {
    Expr coordinate, taken, grid;
  };
  auto side = [&](int k, const Expr& bin_index, const Expr& i, int64_t bins) {
    Expr extent = corner(k + 2) - corner(k);
    if (!half) extent = te::Select(extent > c_(1), extent, c_(1));
    const Expr bin = extent / c_(static_cast<double>(bins));
    const Expr grid = adaptive ? te::Ceil(bin) : c_(static_cast<double>(ratio));
    const Expr start = corner(k) + as_t(bin_index) * bin;
    Expr first = c_(0);
    if (adaptive) {  // the first sample at or past -1: (first + 0.5) * bin / grid >= -1 - start
      const Expr f = te::Ceil((c_(-1) - start) * grid / bin - c_(0.5));
      first = te::Select(f > c_(0), f, c_(0));  // NaN (an empty roi) too
    }
    const Expr at = first + as_t(i);
    return Side{start + (at + c_(0.5)) * bin / grid, at < grid, grid};
  };
  const Side rows = side(1, ph, iy, oh), cols = side(0, pw, ix, ow);
  const Expr sy = rows.coordinate, sx = cols.coordinate;
  const Expr outside = sy < c_(-1) || sy > c_(static_cast<double>(h)) || sx < c_(-1) ||
                       sx > c_(static_cast<double>(w));
  // Clamped into the map whatever the roi (NaN and infinities too), so the loads stay inside.
  auto clamp = [&](const Expr& v, int64_t size) {
    const Expr low = te::Select(v > c_(0), v, c_(0));
    return te::Select(low < c_(static_cast<double>(size - 1)), low,
                      c_(static_cast<double>(size - 1)));
  };
  const Expr yc = clamp(sy, h), xc = clamp(sx, w);
  const Expr y0 = te::Floor(yc), x0 = te::Floor(xc);
  const Expr ly = yc - y0, lx = xc - x0;  // 0 on the last row and column
  const Expr keep = te::Select(outside, c_(0), c_(1));
  const Expr plane = (Expr(te::Cast(te::Index(), BufferLoad(images, r))) * channels + c) * h;
  auto pixel = [&](const Expr& row, const Expr& col, int64_t dy, int64_t dx) {
    Expr yy = te::Min(te::Cast(te::Index(), row) + dy, Expr(h - 1));
    Expr xx = te::Min(te::Cast(te::Index(), col) + dx, Expr(w - 1));
    return BufferLoad(x, (plane + yy) * w + xx);
  };
  const Expr w1 = (c_(1) - ly) * (c_(1) - lx) * keep, w2 = (c_(1) - ly) * lx * keep,
             w3 = ly * (c_(1) - lx) * keep, w4 = ly * lx * keep;
  const Expr v1 = w1 * pixel(y0, x0, 0, 0), v2 = w2 * pixel(y0, x0, 0, 1),
             v3 = w3 * pixel(y0, x0, 1, 0), v4 = w4 * pixel(y0, x0, 1, 1);
  const Expr sample = max ? te::Max(te::Max(te::Max(v1, v2), v3), v4) : v1 + v2 + v3 + v4;
  const Expr so_far = BufferLoad(acc, Expr(0)), visited = BufferLoad(seen, Expr(0));
  Stmt add =
      lower::Seq({lower::Store(acc, Expr(0), max ? te::Max(so_far, sample) : so_far + sample),
                  lower::Store(seen, Expr(0), visited + c_(1))});
  // Past the grid's end a row (or column) of the window is skipped whole, before any sampling.
  auto window = [&](int64_t span_h, int64_t span_w) {
    auto within = [&](const Expr& taken, Stmt body) {
      return adaptive ? lower::If(taken, body) : body;
    };
    return lower::For(
        iy, span_h, ForKind::kSerial,
        within(rows.taken, lower::For(ix, span_w, ForKind::kSerial, within(cols.taken, add))));
  };
  // A box inside the map has grids of at most ceil((size + 1) / bins) a side: those take a window
  // that size (all their samples), larger ones the window that covers the map.
  const int64_t fit_h = CeilDiv(h + 1, oh) + 1, fit_w = CeilDiv(w + 1, ow) + 1;
  const int64_t span_h = adaptive ? 2 * h + 3 : ratio, span_w = adaptive ? 2 * w + 3 : ratio;
  Stmt samples = !adaptive ? window(ratio, ratio)
                           : lower::If(rows.grid <= c_(static_cast<double>(fit_h)) &&
                                           cols.grid <= c_(static_cast<double>(fit_w)),
                                       window(std::min(fit_h, span_h), std::min(fit_w, span_w)),
                                       window(span_h, span_w));
  // ORT and ONNX divide by the grid's size, at least 1; max over a grid with samples past the
  // window includes their zeros, and an empty grid gives 0.
  const Expr total = rows.grid * cols.grid;
  const Expr result = max ? te::Select(total < c_(1), c_(0),
                                       te::Select(visited < total, te::Max(so_far, c_(0)), so_far))
                          : so_far / te::Select(total > c_(1), total, c_(1));
  Stmt bin = lower::Seq({lower::Store(acc, Expr(0), max ? te::MinValue(t) : c_(0)),
                         lower::Store(seen, Expr(0), c_(0)), samples,
                         lower::Store(y, ((r * channels + c) * oh + ph) * ow + pw, result)});
  return lower::Seq(
      {CheckInput(n, 2, images, BatchImages(xs[0])),
       lower::For(r, count, RowsLoop(count, y->size * span_h * span_w),
                  lower::For(c, channels, ForKind::kSerial,
                             lower::For(ph, oh, ForKind::kSerial,
                                        lower::For(pw, ow, ForKind::kSerial, bin))))});
}

// Positions a DeformableColumns task samples: its corners' weights and places are worked out for
// these at once (a few KB of locals), then read back for every channel of the offset group.
constexpr int64_t kSampleChunk = 64;

// DeformConv's columns: row (c, tap) of image n holds, at each output position, channel c sampled
// bilinearly at the tap's place in the window plus the offset its offset group gives it there
// (times the mask, DCN v2), corners outside the image reading 0 and a sample a pixel or more
// outside it 0. The channels of an offset group share their offsets, so a task (image, group,
// tap, chunk of positions) works out each sample's four corners (place and weight, the mask and
// validity folded into the weight) once, then gathers them from each channel of the group. Tasks
// run in parallel.
Stmt DeformableColumns(const Node& n, const std::vector<Buffer>& in, const std::vector<Buffer>& out,
                       lower::LoweredFunc* f) {
  const Buffer &x = in.at(0), &offset = in.at(1), &cols = out.at(0);
  const std::vector<int64_t>& xs = InputType(n, 0).shape;
  const std::vector<int64_t>& os = InputType(n, 1).shape;
  const int64_t channels = xs[1], h = xs[2], w = xs[3], oh = os[2], ow = os[3];
  const std::vector<int64_t> k = n.GetInts("kernel_shape"), s = n.GetInts("strides"),
                             d = n.GetInts("dilations"), p = n.GetInts("pads");
  const int64_t taps = k[0] * k[1], positions = oh * ow, groups = n.GetInt("offset_group");
  const int64_t per_group = channels / groups;
  // The last chunk starts `chunk` before the end, overlapping the one before it (the same values
  // written twice), so that every chunk's positions are consecutive.
  const int64_t chunk = std::min(kSampleChunk, positions), chunks = CeilDiv(positions, chunk);
  const te::DataType t = x->dtype;
  auto c_ = [&](double v) { return te::Const(t, v); };
  Expr task = te::MakeVar("task"), j = te::MakeVar("j"), cg = te::MakeVar("cg"),
       i = te::MakeVar("i");
  const Expr at = te::FloorDiv(task, Expr(chunks));  // (image, group, tap): its offsets' row
  const Expr image = te::FloorDiv(at, Expr(groups * taps));
  const Expr group = te::FloorMod(te::FloorDiv(at, Expr(taps)), Expr(groups));
  const Expr tap = te::FloorMod(at, Expr(taps));
  const Expr start = te::Min(te::FloorMod(task, Expr(chunks)) * chunk, Expr(positions - chunk));
  const Expr l = start + j;
  const Expr dy = BufferLoad(offset, (at * 2) * positions + l),
             dx = BufferLoad(offset, (at * 2 + 1) * positions + l);
  const Expr sy = Expr(te::Cast(t, te::FloorDiv(l, Expr(ow)) * s[0] - p[0] +
                                       te::FloorDiv(tap, Expr(k[1])) * d[0])) +
                  dy;
  const Expr sx = Expr(te::Cast(t, te::FloorMod(l, Expr(ow)) * s[1] - p[1] +
                                       te::FloorMod(tap, Expr(k[1])) * d[1])) +
                  dx;
  // NaN and infinite offsets fail `inside` and read (0, 0) weighted by 0.
  const Expr inside = sy > c_(-1) && sy < c_(static_cast<double>(h)) && sx > c_(-1) &&
                      sx < c_(static_cast<double>(w));
  const Expr yc = te::Select(inside, sy, c_(0)), xc = te::Select(inside, sx, c_(0));
  const Expr y0 = te::Floor(yc), x0 = te::Floor(xc);
  const Expr ly = yc - y0, lx = xc - x0;
  const Expr scale = in.size() > 2 ? BufferLoad(in[2], at * positions + l) : c_(1);
  // An input of fewer than 2^31 elements is indexed in 32 bits: the corners then gather 16 lanes
  // at a time on AVX-512 rather than 8.
  const te::DataType it = x->size < (int64_t{1} << 31) ? te::Int(32) : te::Index();
  auto i_ = [&](int64_t v) { return te::IntImm(it, v); };
  const Expr iy = te::Cast(it, y0), ix = te::Cast(it, x0);
  const Buffer weights = AddLocal(f, n.name + "_weights", t, 4 * chunk),
               places = AddLocal(f, n.name + "_places", it, 4 * chunk);
  std::vector<Stmt> corners;
  auto corner = [&](int64_t q, int64_t below, int64_t right, const Expr& weight) {
    const Expr yy = iy + i_(below), xx = ix + i_(right);
    const Expr valid = inside && yy >= i_(0) && yy < i_(h) && xx >= i_(0) && xx < i_(w);
    const Expr ry = te::Min(te::Max(yy, i_(0)), i_(h - 1));
    const Expr rx = te::Min(te::Max(xx, i_(0)), i_(w - 1));
    corners.push_back(
        lower::Store(weights, j + q * chunk, te::Select(valid, weight * scale, c_(0))));
    corners.push_back(lower::Store(places, j + q * chunk, ry * i_(w) + rx));
  };
  corner(0, 0, 0, (c_(1) - ly) * (c_(1) - lx));
  corner(1, 0, 1, (c_(1) - ly) * lx);
  corner(2, 1, 0, ly * (c_(1) - lx));
  corner(3, 1, 1, ly * lx);
  // Each channel of the group: its plane's four corners, weighted.
  const Expr plane = image * channels + group * per_group + cg;  // (image, channel)
  const Expr channel = te::Cast(it, plane);
  Expr value;
  for (int64_t q = 0; q < 4; ++q) {
    const Expr place =
        te::Cast(te::Index(), channel * i_(h * w) + BufferLoad(places, i + q * chunk));
    const Expr term = BufferLoad(weights, i + q * chunk) * BufferLoad(x, place);
    value = value.defined() ? value + term : term;
  }
  const Expr row = plane * taps + tap;
  Stmt gather = lower::For(cg, per_group, ForKind::kSerial,
                           lower::For(i, chunk, ForKind::kVectorized,
                                      lower::Store(cols, row * positions + start + i, value)));
  const int64_t tasks = xs[0] * groups * taps * chunks;
  return lower::For(
      task, tasks, RowsLoop(tasks, cols->size),
      lower::Seq({lower::For(j, chunk, ForKind::kVectorized, lower::Seq(corners)), gather}));
}

const bool kRegistered = [] {
  RegisterLoopKernel("Col2Im", Col2Im);
  RegisterLoopKernel("RoiAlign", RoiAlign);
  RegisterLoopKernel("DeformableColumns", DeformableColumns);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
