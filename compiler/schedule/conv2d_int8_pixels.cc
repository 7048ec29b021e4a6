// The integer conv with output pixels in the vector lanes: a register holds consecutive positions
// of one output channel's plane, which is what the NCHW output wants. Any kernel size, stride,
// padding and dilation.
//
// With output channels in the lanes (conv2d_int8.cc) the int32 sums come out channel-interleaved
// and need a pass through a blocked workspace to become NCHW rows, a strided read per output
// channel; with pixels in the lanes a channel's sums are a row already. Per image the data is
// copied once by PackInt8Data (int8 data + 128, padded with the zero point) split by stride phase
// into [ICp/4][s_h][s_w][rows][cols][4] bytes, so that for each tap (kh, kw) output position
// (oh, ow) reads the int32 word tap + oh * cols + ow, the tap's phase plane and offset folded
// into `tap`: consecutive outputs of a row read consecutive words, one vector load for `lanes` of
// them. A tile therefore computes whole vectors of positions counted `cols` to an output row: the
// columns from OW to cols are padding, computed and dropped; where cols == OW the plane is one
// run. The weights, packed at compile time one channel at a time ([OC][ICp/4][KH][KW][4] int8,
// PackConvWeights with block 1), are one broadcast int32 per channel and step. A tile is up to
// `pixel_vectors` vectors of positions (whole rows of a narrow plane, a piece of a row of a wide
// one) times `rows` output channels of accumulators, started at the packed bias (which carries
// the zero point's compensation); each step is one te::DotU8S8 (or te::DotU8S8Pairs, or
// te::DotS8S8 over the data less 128: Int8ConvDot) per accumulator. The tile's sums go to a small
// buffer on the stack, from which the group's epilogue (the requantization) writes each channel's
// rows with contiguous loads and stores.
#include "conv2d_int8_pixels.h"

#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_group.h"
#include "epilogue.h"
#include "loop_builders.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

constexpr int64_t kDotDepth = kInt8DotDepth;

// The largest divisor of oc not above most (the output channels of one tile).
int64_t ChannelRows(int64_t oc, int64_t most) {
  for (int64_t r = std::min(oc, most); r > 1; --r) {
    if (oc % r == 0) return r;
  }
  return 1;
}

// The output plane as the tiles walk it: `height` rows of `width` positions, `pitch` words apart
// in the data. A plane without padding columns (cols == OW) is one row of OH * OW positions.
struct TilePlane {
  int64_t height, width, pitch;
  bool one_run;
};

// `groups` x `pieces` tiles of `height` rows from row y0 by `width` positions from x0.
struct TileRegion {
  int64_t y0, height, groups, x0, width, pieces;
};

// Where a conv's tiles fall: the data layout they read, the plane and its regions of tiles.
struct PixelTiling {
  Int8DataLayout layout;
  TilePlane plane;
  std::vector<TileRegion> regions;
  int64_t vectors;  // vectors of positions computed per output channel
};

// The vectors a tile of `height` rows of `width` positions computes.
int64_t TileVectors(const TilePlane& plane, int64_t lanes, int64_t height, int64_t width) {
  return ((height - 1) * plane.pitch + width + lanes - 1) / lanes;
}

PixelTiling PlanPixelTiles(const Int8Conv& m, int64_t oh, int64_t ow, const Conv2dInt8Params& p) {
  const int64_t per_tile = p.pixel_vectors * p.lanes;
  PixelTiling t;
  t.layout.s_h = m.s_h;
  t.layout.s_w = m.s_w;
  t.layout.rows = (PaddedRows(m, oh) + m.s_h - 1) / m.s_h;
  t.layout.cols = (PaddedCols(m, ow) + m.s_w - 1) / m.s_w;
  t.plane = t.layout.cols == ow ? TilePlane{1, oh * ow, oh * ow, true}
                                : TilePlane{oh, ow, t.layout.cols, false};
  const TilePlane& pl = t.plane;
  if (pl.width <= per_tile) {
    // Narrow rows: as many whole rows per tile as its vectors hold, then the rows left.
    const int64_t height = std::min(pl.height, (per_tile - pl.width) / pl.pitch + 1);
    const int64_t groups = pl.height / height;
    t.regions = {{0, height, groups, 0, pl.width, 1},
                 {groups * height, pl.height % height, 1, 0, pl.width, 1}};
  } else {
    // Wide rows: pieces of a tile's positions, then the piece left at each row's end.
    const int64_t pieces = pl.width / per_tile;
    t.regions = {{0, 1, pl.height, 0, per_tile, pieces},
                 {0, 1, pl.height, pieces * per_tile, pl.width % per_tile, 1}};
  }
  t.vectors = 0;
  for (const TileRegion& r : t.regions) {
    if (r.height > 0 && r.width > 0) {
      t.vectors += r.groups * r.pieces * TileVectors(pl, p.lanes, r.height, r.width);
    }
  }
  return t;
}

struct PixelTile {
  const Int8Conv& m;
  const Conv2dInt8Params& p;
  int64_t quads, rows, oh, ow;  // rows: output channels per tile; oh x ow: the output plane
  Int8DataLayout layout;
  TilePlane plane;
  Buffer xq32, w32, bias, out;
  Buffer zp, wsum;  // a run-time zero point and the weight sums, or null
  const EpilogueAt& at;
  bool flat;  // the epilogue reads the plane flat (EpilogueReadsPlaneFlat)
  lower::LoweredFunc* f;
};

// The word of a quad's data that tap (kh, kw) reads for output position 0: its phase plane, then
// its rows and columns within that phase (a tap's row and column with one phase).
Expr TapWord(const PixelTile& t, const Expr& kh, const Expr& kw) {
  const Int8Conv& m = t.m;
  const Expr y = kh * m.d_h, x = kw * m.d_w, s_h = t.layout.s_h, s_w = t.layout.s_w;
  const Expr phase = te::FloorMod(y, s_h) * s_w + te::FloorMod(x, s_w);
  return (phase * t.layout.rows + te::FloorDiv(y, s_h)) * t.layout.cols + te::FloorDiv(x, s_w);
}

// Output channels cb * rows ... + rows - 1 at rows y0 .. y0 + height - 1, positions x0 .. x0 +
// width - 1 of the tile plane, image n.
Stmt MakePixelTile(const PixelTile& t, const std::string& tag, const Expr& n, const Expr& cb,
                   const Expr& y0, const Expr& x0, int64_t height, int64_t width) {
  const Int8Conv& m = t.m;
  const int lanes = static_cast<int>(t.p.lanes);
  const int64_t vectors = TileVectors(t.plane, lanes, height, width);
  const int64_t pitch = t.plane.pitch;
  const te::DataType acc_type = te::WithLanes(te::Int(32), lanes);
  Buffer sums = lower::NewBuffer(t.f->name + "_tile" + tag, te::Int(32), t.rows * vectors * lanes,
                                 lower::BufferScope::kLocal);
  t.f->locals.push_back(sums);
  Expr c4 = te::MakeVar("c4");
  Expr first = c4 * t.layout.QuadWords() + y0 * pitch + x0;
  std::vector<Buffer> acc;
  std::vector<Stmt> init, update, spill, epilogue;
  for (int64_t r = 0; r < t.rows; ++r) {
    Expr oc = cb * t.rows + r;
    for (int64_t v = 0; v < vectors; ++v) {
      acc.push_back(lower::NewBuffer("acc" + tag + std::to_string(r) + "_" + std::to_string(v),
                                     acc_type, 1, lower::BufferScope::kLocal));
      t.f->locals.push_back(acc.back());
      init.push_back(lower::Store(
          acc.back(), 0, te::Broadcast(KernelBias(m, t.bias, t.zp, t.wsum, oc, 1), lanes)));
      spill.push_back(lower::Store(sums, (r * vectors + v) * lanes, BufferLoad(acc.back(), 0)));
    }
  }
  Expr kh = te::MakeVar("kh"), kw = te::MakeVar("kw");
  Expr khe = m.kh > 1 ? kh : Expr(0), kwe = m.kw > 1 ? kw : Expr(0);
  std::vector<Expr> x;
  for (int64_t v = 0; v < vectors; ++v) {
    x.push_back(lower::VectorLoad(t.xq32, first + TapWord(t, khe, kwe) + v * lanes, lanes));
  }
  for (int64_t r = 0; r < t.rows; ++r) {
    Expr oc = cb * t.rows + r;
    Expr w =
        te::Broadcast(BufferLoad(t.w32, ((oc * t.quads + c4) * m.kh + khe) * m.kw + kwe), lanes);
    for (int64_t v = 0; v < vectors; ++v) {
      const Buffer& a = acc[r * vectors + v];
      update.push_back(lower::Store(a, 0, Int8ConvDot(t.p, BufferLoad(a, 0), x[v], w)));
    }
  }
  // Each channel's rows: contiguous sums in, contiguous outputs out, vectors of exactly `lanes`
  // (a partial row's in overlapping steps).
  auto index = [&](const Expr& oc, const Expr& y, const Expr& x) -> std::vector<Expr> {
    if (!t.plane.one_run) return {n, oc, y, x};
    if (t.flat) return {n, oc, Expr(0), x};
    return {n, oc, te::FloorDiv(x, Expr(t.ow)), te::FloorMod(x, Expr(t.ow))};
  };
  for (int64_t r = 0; r < t.rows; ++r) {
    Expr oc = cb * t.rows + r;
    for (int64_t i = 0; i < height; ++i) {
      auto row = [&](const Expr& j) {
        Expr y = y0 + i, x = x0 + j;
        Expr sum = BufferLoad(sums, r * vectors * lanes + i * pitch + j);
        return lower::Store(t.out, ((n * m.oc + oc) * t.plane.height + y) * t.plane.width + x,
                            t.at(index(oc, y, x), sum));
      };
      epilogue.push_back(width % lanes == 0 ? VectorizedFor("q", width, lanes, row)
                                            : VectorSteps("q", 0, width, lanes, row));
    }
  }
  std::vector<Stmt> tile = init;
  Stmt reduction = lower::Seq(update);
  reduction = lower::KeepScalarFor(kw, m.kw, reduction);
  reduction = lower::KeepScalarFor(kh, m.kh, reduction);
  tile.push_back(lower::KeepScalarFor(c4, t.quads, reduction));
  tile.insert(tile.end(), spill.begin(), spill.end());
  tile.insert(tile.end(), epilogue.begin(), epilogue.end());
  return lower::Seq(tile);
}

// The tiles of region r for every block of output channels.
Stmt TileLoop(const PixelTile& t, const std::string& tag, const Expr& n, const TileRegion& r,
              const lower::ScheduleOptions& opts) {
  if (r.groups <= 0 || r.pieces <= 0 || r.height <= 0 || r.width <= 0) return nullptr;
  const int64_t blocks = t.m.oc / t.rows, tiles = blocks * r.groups * r.pieces;
  const int64_t work_per_tile = TileVectors(t.plane, t.p.lanes, r.height, r.width) * t.p.lanes *
                                t.rows * t.quads * kDotDepth * t.m.kh * t.m.kw;
  const bool par = opts.parallel && tiles > 1 && tiles * work_per_tile >= opts.parallel_min_work;
  return Range("t" + tag, 0, tiles, par ? ForKind::kParallel : ForKind::kSerial,
               [&](const Expr& ti) {
                 Expr cb = te::FloorDiv(ti, Expr(r.groups * r.pieces));
                 Expr g = te::FloorMod(te::FloorDiv(ti, Expr(r.pieces)), Expr(r.groups));
                 Expr k = te::FloorMod(ti, Expr(r.pieces));
                 return MakePixelTile(t, tag, n, cb, g * r.height + r.y0, k * r.width + r.x0,
                                      r.height, r.width);
               });
}

}  // namespace

bool Conv2dInt8PixelsPays(const Int8Conv& m, int64_t oh, int64_t ow, const Conv2dInt8Params& p) {
  const PixelTiling tiling = PlanPixelTiles(m, oh, ow, p);
  const double steps = static_cast<double>(RoundUp(m.c, kDotDepth) / kDotDepth * m.kh * m.kw);
  const double pixels_used = static_cast<double>(oh * ow) / (tiling.vectors * p.lanes);
  const double channels_used = static_cast<double>(m.oc) / RoundUp(m.oc, p.lanes);
  return steps / pixels_used <= steps / channels_used + kChannelsFormEpilogueSteps;
}

bool TryConv2dInt8Pixels(const FusedGroup& group, const lower::ScheduleOptions& opts,
                         const Conv2dInt8Params& p, lower::LoweredFunc* out) {
  Int8ConvGroup ig;
  // Its data in NCHW or blocked (PackInt8Data reads either); its output in NCHW rows only.
  if (p.pixel_vectors <= 0 || p.channel_rows <= 0 || !ReadInt8ConvGroup(group, p, &ig) ||
      ig.m.out_block != 0) {
    return false;
  }
  const Int8Conv& m = ig.m;
  const PixelTiling tiling = PlanPixelTiles(m, ig.oh, ig.ow, p);
  // The last tiles' vectors run past their rows by up to a row and a tile.
  const Int8ConvViews v = AddInt8ConvViews(
      &ig, ig.quads * tiling.layout.QuadWords() + tiling.layout.cols + p.pixel_vectors * p.lanes);
  lower::LoweredFunc& f = ig.f;
  PixelTile t{m,      p,       ig.quads,      ChannelRows(m.oc, p.channel_rows),
              ig.oh,  ig.ow,   tiling.layout, tiling.plane,
              v.xq32, v.w32,   ig.bias,       f.args.back().buffer,
              ig.zp,  ig.wsum, ig.at,         EpilogueReadsPlaneFlat(ig.at, ig.ow),
              &f};

  Expr n = te::MakeVar("n");
  std::vector<Stmt> image{
      PackInt8Data(m, ig.x, ZeroPointByte(m, ig.zp), Int8DataOffset(p), v, n, tiling.layout, opts)};
  const char* tags[] = {"m", "r"};
  for (size_t i = 0; i < tiling.regions.size(); ++i) {
    image.push_back(TileLoop(t, tags[i], n, tiling.regions[i], opts));
  }
  f.body = lower::For(n, m.n, ForKind::kSerial, SeqOf(image));
  f.prefer_vector_bits = static_cast<int>(p.lanes * 32);
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
