// Depthwise 2-D convolution in NCHW[x]c with its epilogue fused.
//
// In the blocked layout the x channels of one pixel are one SIMD vector, and a depthwise conv
// multiplies each pixel's vector by the tap's weight vector (weights packed [C/x][KH][KW][x]):
// no shuffles, no row copies. One parallel task is (image, block of output rows, channel block):
// one row, or on small planes as many as make `task_pixels`, so the weights and the bias are
// loaded once for all of them (or, where all the taps would leave too few registers for a tile,
// one tap row's at a time, reloaded from L1 per tile; TapPlan). A row runs in tiles of up to
// `columns` output pixels (on NEON, stride 1, two rows at a time: row_pairs) whose accumulators
// stay in registers (independent FMA chains) and start from the bias; only the few border
// pixels, whose taps can fall into the padding, test their columns, and the border rows have
// copies of the row that leave out the tap rows in the padding (one per run of rows that leave
// out the same ones). The rest of the epilogue is applied to each finished vector before its one
// store.
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>

#include "conv_group.h"
#include "loop_builders.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::Stmt;
using te::Expr;

struct RowContext {
  const ConvShape& s;
  int lanes;                    // = the layout's block
  Buffer x, out;                // [N][C/x][H][W][x], [N][C/x][OH][OW][x]
  std::vector<Buffer> weights;  // one local per tap, loaded once per task; or none:
  Buffer packed_weights;        // [C/x][KH][KW][x], read per tile when the taps stay in memory
  Buffer bias;                  // local holding the task's bias, loaded once; or null
  const EpilogueAt& at;         // the group's epilogue per element of the blocked output
  Expr n, cb;                   // the task
  lower::LoweredFunc* f;        // receives the accumulator locals
  // Pixel pairs: the block is half the target's vectors and the stride 1, so two neighbouring
  // output pixels' channels (adjacent in NCHW[x]c) share a vector, as do their taps' inputs; the
  // weight and bias locals then hold their block twice.
  bool pairs = false;
  bool row_streams = false;  // see DepthwiseParams::row_streams_past
};

// The index of input pixel (ih, iw) in image `image` (n * C/x + cb). With row streams the row's
// start is behind te::StreamBase, so that each tap row keeps a base register of its own.
Expr InputIndex(const RowContext& c, const Expr& image, const Expr& ih, const Expr& iw) {
  if (!c.row_streams) return ((image * c.s.h + ih) * c.s.w + iw) * c.lanes;
  return te::StreamBase((image * c.s.h + ih) * (c.s.w * c.lanes)) + iw * c.lanes;
}

// The index of output pixel (oh, ow) in image `image`. With row streams a tile of two rows
// (row pairs) stores each row from a base of its own: rows of wide planes lie farther apart
// than a paired store (stp q) reaches, and the second row's stores would go one at a time.
Expr OutputIndex(const RowContext& c, const Expr& image, const Expr& oh, const Expr& ow,
                 int64_t out_rows) {
  if (!c.row_streams || out_rows == 1) return ((image * c.s.oh + oh) * c.s.ow + ow) * c.lanes;
  return te::StreamBase((image * c.s.oh + oh) * (c.s.ow * c.lanes)) + ow * c.lanes;
}

// The first `lanes` values of a weight or bias local (one block, or both copies of a pair's).
Expr LocalVector(const RowContext& c, const Buffer& b, int lanes) {
  return c.pairs ? lower::VectorLoad(b, 0, lanes) : BufferLoad(b, 0);
}

// Tap k's weight vector (`lanes` values: one block, or a pair's two copies).
Expr TapVector(const RowContext& c, int64_t k, int lanes) {
  if (c.weights.empty()) {
    return lower::VectorLoad(c.packed_weights, (c.cb * (c.s.kh * c.s.kw) + k) * c.lanes, lanes);
  }
  return LocalVector(c, c.weights[static_cast<size_t>(k)], lanes);
}

// Tap rows [kh_begin, kh_end) are those inside the image for the output row a Row computes.
struct TapRows {
  int64_t begin, end;
};

Stmt PixelPairs(const RowContext& c, const std::string& tag, const Expr& oh, const TapRows& rows,
                const Expr& ow0, int64_t count);

// `count` output pixels from column ow0 of `out_rows` rows from oh. With check_columns, taps left
// or right of the image are skipped per pixel (border pixels). The accumulators start from the
// bias, so the epilogue has no add left to do. Rows of a tile read the same input pixels where
// their taps overlap (stride 1: two rows share kh - 1 input rows); those loads have the same
// address, so LLVM loads each once for the whole tile.
Stmt Pixels(const RowContext& c, const std::string& tag, const Expr& oh, const TapRows& rows,
            const Expr& ow0, int64_t count, bool check_columns, int64_t out_rows) {
  if (c.pairs && !check_columns && count % 2 == 0) return PixelPairs(c, tag, oh, rows, ow0, count);
  const ConvShape& s = c.s;
  const Expr image = c.n * (s.c / c.lanes) + c.cb;
  std::vector<Buffer> acc;
  std::vector<Stmt> body;
  for (int64_t t = 0; t < out_rows * count; ++t) {
    acc.push_back(NewVectorAccumulator("acc" + tag + std::to_string(t), c.lanes));
    c.f->locals.push_back(acc.back());
    Expr start = c.bias ? LocalVector(c, c.bias, c.lanes) : te::Const(acc.back()->dtype, 0);
    body.push_back(lower::Store(acc.back(), 0, start));
  }
  for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      for (int64_t r = 0; r < out_rows; ++r) {
        Expr ih = (oh + r) * s.s_h + (kh * s.d_h - s.pad_t);
        for (int64_t t = 0; t < count; ++t) {
          Expr iw = (ow0 + t) * s.s_w + (kw * s.d_w - s.pad_l);
          Expr in = lower::VectorLoad(c.x, InputIndex(c, image, ih, iw), c.lanes);
          const Buffer& a = acc[static_cast<size_t>(r * count + t)];
          Stmt fma =
              lower::Store(a, 0, BufferLoad(a, 0) + in * TapVector(c, kh * s.kw + kw, c.lanes));
          body.push_back(check_columns ? lower::If((iw >= 0) && (iw < s.w), fma) : fma);
        }
      }
    }
  }
  for (int64_t r = 0; r < out_rows; ++r) {
    for (int64_t t = 0; t < count; ++t) {
      Expr ow = ow0 + t, row = oh + r;
      Expr value =
          EpilogueOnBlockVector(c.at, c.n, c.cb, row, ow,
                                BufferLoad(acc[static_cast<size_t>(r * count + t)], 0), c.lanes);
      body.push_back(lower::Store(c.out, OutputIndex(c, image, row, ow, out_rows), value));
    }
  }
  return lower::Seq(body);
}

// `count` (even) interior output pixels from column ow0 of row oh as count / 2 pixel pairs: each
// tap reads a pair's two input pixels in one vector load and multiplies them by the tap's
// weights twice over; the finished pair gets the epilogue a pixel at a time.
Stmt PixelPairs(const RowContext& c, const std::string& tag, const Expr& oh, const TapRows& rows,
                const Expr& ow0, int64_t count) {
  const ConvShape& s = c.s;
  const Expr image = c.n * (s.c / c.lanes) + c.cb;
  const int pair = 2 * c.lanes;
  std::vector<Buffer> acc;
  std::vector<Stmt> body;
  for (int64_t q = 0; q < count / 2; ++q) {
    acc.push_back(
        NewFloatBuffer("acc" + tag + "p" + std::to_string(q), pair, lower::BufferScope::kLocal));
    c.f->locals.push_back(acc.back());
    Expr start =
        c.bias ? LocalVector(c, c.bias, pair) : te::Const(te::WithLanes(te::Float(32), pair), 0);
    body.push_back(lower::Store(acc.back(), 0, start));
  }
  for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
    Expr ih = oh * s.s_h + (kh * s.d_h - s.pad_t);
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      for (int64_t q = 0; q < count / 2; ++q) {
        Expr iw = ow0 + (2 * q + kw * s.d_w - s.pad_l);
        Expr in = lower::VectorLoad(c.x, InputIndex(c, image, ih, iw), pair);
        Expr w = TapVector(c, kh * s.kw + kw, pair);
        body.push_back(lower::Store(acc[q], 0, lower::VectorLoad(acc[q], 0, pair) + in * w));
      }
    }
  }
  for (int64_t q = 0; q < count / 2; ++q) {
    for (int64_t half = 0; half < 2; ++half) {
      Expr ow = ow0 + (2 * q + half);
      Expr value = EpilogueOnBlockVector(
          c.at, c.n, c.cb, oh, ow, lower::VectorLoad(acc[q], half * c.lanes, c.lanes), c.lanes);
      body.push_back(lower::Store(c.out, OutputIndex(c, image, oh, ow, 1), value));
    }
  }
  return lower::Seq(body);
}

// Pixels [begin, end) of `out_rows` rows from oh, `columns` at a time, the rest as one narrower
// tile (border pixels, check_columns, one at a time).
Stmt Run(const RowContext& c, const std::string& tag, const Expr& oh, const TapRows& rows,
         int64_t begin, int64_t end, int64_t columns, bool check_columns, int64_t out_rows) {
  if (end <= begin) return nullptr;
  // One tile and a rest of more than half a tile would be straight-line code in one block, which
  // LLVM interleaves with both tiles' accumulators live at once: on AArch64 a stride-2 row of 8
  // and 5 spilled. Two tiles of half the run go through the tile loop, one at a time.
  const int64_t run = end - begin;
  if (!check_columns && run > columns && run < 2 * columns && run - columns > columns / 2) {
    columns = c.pairs && run / 2 > 2 ? run / 4 * 2 : run / 2;
  }
  const int64_t tiles = run / columns, rest = run % columns;
  std::vector<Stmt> parts;
  if (tiles > 0) {
    Expr tile = te::MakeVar(tag + "t");
    parts.push_back(lower::KeepScalarFor(
        tile, tiles,
        Pixels(c, tag + "t", oh, rows, tiles > 1 ? tile * columns + begin : Expr(begin), columns,
               check_columns, out_rows)));
  }
  if (rest > 0 && !check_columns) {
    parts.push_back(
        Pixels(c, tag + "r", oh, rows, Expr(begin + tiles * columns), rest, false, out_rows));
  } else if (rest > 0) {
    Expr ow = te::MakeVar(tag + "r");
    parts.push_back(lower::KeepScalarFor(
        ow, rest,
        Pixels(c, tag + "r", oh, rows,
               rest > 1 ? ow + (begin + tiles * columns) : Expr(begin + tiles * columns), 1,
               check_columns, out_rows)));
  }
  return SeqOf(parts);
}

// Output positions [begin, end) along one axis whose taps all fall inside the image.
struct Interior {
  int64_t begin, end;
};

// The interior of an axis of `in` input and `out` output positions, its taps spanning `span`
// from the first one at -pad, `stride` apart.
Interior InteriorOfAxis(int64_t pad, int64_t stride, int64_t in, int64_t span, int64_t out) {
  const int64_t begin = std::min(out, (pad + stride - 1) / stride);
  return {begin, std::clamp((in - span + pad) / stride + 1, begin, out)};
}

Interior InteriorColumnsOf(const ConvShape& s) {
  return InteriorOfAxis(s.pad_l, s.s_w, s.w, SpanW(s), s.ow);
}

Interior InteriorRowsOf(const ConvShape& s) {
  return InteriorOfAxis(s.pad_t, s.s_h, s.h, SpanH(s), s.oh);
}

// `out_rows` output rows from oh (1, or 2 for row pairs), reading tap rows `rows`: their border
// pixels, then their interior in tiles of up to `columns` pixels a row.
Stmt Row(const RowContext& c, const std::string& tag, const Expr& oh, const TapRows& rows,
         int64_t columns, int64_t out_rows = 1) {
  const ConvShape& s = c.s;
  const auto [lo, hi] = InteriorColumnsOf(s);
  int64_t width = std::clamp<int64_t>(hi - lo, 1, columns);
  if (c.pairs && width > 1 && width % 2 == 1) --width;  // whole pairs; the rest one pixel
  return SeqOf({Run(c, tag + "l", oh, rows, 0, lo, 1, true, out_rows),
                Run(c, tag + "m", oh, rows, lo, hi, width, false, out_rows),
                Run(c, tag + "r", oh, rows, hi, s.ow, 1, true, out_rows)});
}

// Vector registers beyond the taps' weights: accumulators need at least one, plus the input
// vector and a temporary.
constexpr int64_t kWorkingRegisters = 3;

// Border rows that read the same tap rows share one copy of the row code (a loop over them);
// more distinct sets than this (huge paddings) go to another kernel.
constexpr int64_t kMaxBorderRowCopies = 8;

// Whether the first and the last tap rows start farther apart than the entry's paired loads
// reach (DepthwiseParams::row_streams_past), so that each tap row gets a stream of its own.
bool RowStreams(const ConvShape& s, int64_t block, const DepthwiseParams& p) {
  const int64_t tap_rows_apart = (s.kh - 1) * s.d_h * s.w * block * int64_t{sizeof(float)};
  return p.row_streams_past > 0 && tap_rows_apart > p.row_streams_past;
}

// Where a task's tap weights live, and the accumulator registers a tile gets. All the taps in
// registers for the whole task, unless that leaves fewer accumulators than half a tile of
// `columns`: then the taps stay in memory (L1) and every tile reloads them, one tap row's worth
// live at a time, so a 5x5 conv on AVX2's 16 registers runs blocked in tiles of 8 (it left the
// blocked layout for the NCHW schedule, 2-3x slower). Half a tile is where the reloads start to
// cost less than the narrow tile's extra input loads: a 3x3 conv on AVX2 (4 accumulators with
// every tap held) ran no faster in tiles of 8 that reload its taps, and stride 2 slower.
struct TapPlan {
  bool in_registers;
  int64_t tile_registers;  // 0: no tile fits
};

TapPlan PlanTaps(const ConvShape& s, int64_t registers, int64_t columns) {
  const int64_t wanted = std::max<int64_t>(columns, 1);
  const int64_t all_taps = registers - s.kh * s.kw - kWorkingRegisters;
  if (all_taps >= (wanted + 1) / 2) return {true, std::min(all_taps, wanted)};
  const int64_t one_row = registers - s.kw - kWorkingRegisters;
  return {false, std::clamp<int64_t>(one_row, 0, wanted)};
}

// Output pixels per row of a row pair's tile: half the accumulators of a single row's tile, or
// the entry's wider pair_columns where the row's interior makes two such tiles or more (one
// tile and a rest would be straight-line code that holds both tiles' accumulators at once).
int64_t PairColumns(const ConvShape& s, int64_t registers, const DepthwiseParams& p,
                    const TapPlan& plan) {
  const int64_t narrow = std::max<int64_t>(1, plan.tile_registers / 2);
  if (p.pair_columns <= narrow) return narrow;
  const int64_t wide =
      std::min(p.pair_columns, PlanTaps(s, registers, 2 * p.pair_columns).tile_registers / 2);
  const Interior inner = InteriorColumnsOf(s);
  return wide > narrow && (inner.end - inner.begin) / wide >= 2 ? wide : narrow;
}

bool TapsFit(const ConvShape& s, int64_t registers, int64_t columns) {
  return PlanTaps(s, registers, columns).tile_registers > 0;
}

// The taps of output row oh that fall inside the image.
TapRows TapRowsInside(const ConvShape& s, int64_t oh) {
  const int64_t top = oh * s.s_h - s.pad_t;   // the input row of tap 0
  auto first_at_or_past = [&](int64_t row) {  // the first tap kh with top + kh * d_h >= row
    return std::clamp<int64_t>(row > top ? (row - top + s.d_h - 1) / s.d_h : 0, 0, s.kh);
  };
  return TapRows{first_at_or_past(0), first_at_or_past(s.h)};
}

// Output rows [begin, end) that read the same tap rows.
struct BorderRows {
  int64_t begin, end;
  TapRows taps;
};

// Rows [begin, end) split where the tap rows they read change (a dilated conv's border rows
// come in a few such runs: dilation 8 and padding 8 make 8 rows a side that skip the same tap).
std::vector<BorderRows> BorderRunsOf(const ConvShape& s, int64_t begin, int64_t end) {
  std::vector<BorderRows> runs;
  for (int64_t oh = begin; oh < end; ++oh) {
    const TapRows taps = TapRowsInside(s, oh);
    if (!runs.empty() && runs.back().taps.begin == taps.begin && runs.back().taps.end == taps.end) {
      runs.back().end = oh + 1;
    } else {
      runs.push_back({oh, oh + 1, taps});
    }
  }
  return runs;
}

bool BorderRowsFit(const ConvShape& s) {
  const Interior inner = InteriorRowsOf(s);
  const size_t copies =
      BorderRunsOf(s, 0, inner.begin).size() + BorderRunsOf(s, inner.end, s.oh).size();
  return copies <= kMaxBorderRowCopies;
}

}  // namespace

bool DepthwiseTapsHeld(const ConvShape& s, int64_t registers, int64_t columns) {
  return PlanTaps(s, registers, columns).in_registers;
}

bool DepthwiseNchwcApplies(const ConvShape& s, const Target& target) {
  // One accumulator beside a tap row's weights: then every entry's PlanTaps gives a tile.
  return TapsFit(s, VectorRegisters(ClassifyTarget(target)), 1) && BorderRowsFit(s);
}

bool TryDepthwiseConv2dNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                             const DepthwiseParams& p, lower::LoweredFunc* out) {
  ConvGroup m;
  if (opts.target == nullptr || !MatchConvGroup(group, &m)) return false;
  const ConvShape& s = m.s;
  if (s.group != s.c || s.oc != s.c || s.icg != 1 || s.ocg != 1) return false;
  // One block per vector: the entry's vector width, or a narrower one the channels fill.
  const int64_t block = s.out_block;
  if (block < kMinLayoutBlock || block > p.lanes || p.lanes % block != 0) return false;
  if (s.in_block != block || m.conv->GetInt(kPackedWeightBlockAttr, 0) != block) return false;
  const int64_t registers =
      p.vector_registers > 0 ? p.vector_registers : VectorRegisters(ClassifyTarget(*opts.target));
  const TapPlan plan = PlanTaps(s, registers, p.columns);
  if (plan.tile_registers == 0) return false;
  const int64_t taps = s.kh * s.kw;
  // Pairs hold their weights twice over in locals; taps read from memory would need each block
  // broadcast to both halves of the vector, so those take one pixel a (narrower) vector.
  const bool pairs = s.s_w == 1 && p.lanes >= 2 * block && plan.in_registers;
  // Accumulator registers per tile; a pair's holds two pixels.
  const int64_t columns = pairs ? 2 * plan.tile_registers : plan.tile_registers;

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  BiasAt bias_at;
  if (!BuildConvEpilogueAt(group, m, &f, &xb, &wb, &at, &bias_at)) return false;
  const int lanes = static_cast<int>(block);
  if (!EpilogueVectorizes(at, lanes)) return false;

  // Rows whose taps all fall inside the image's rows read every tap row; each run of border rows
  // above and below them has its own copy that reads only the tap rows inside the image (no row
  // checks anywhere), run by the first or the last task of its channel block.
  if (!BorderRowsFit(s)) return false;
  const Interior inner = InteriorRowsOf(s);
  const int64_t row_lo = inner.begin, row_hi = inner.end;

  // One task per (image, block of `rows` interior output rows, channel block).
  const int64_t blocks = s.c / block;
  const int64_t interior = row_hi - row_lo;
  // Row pairs (stride 1) want two rows a task at least.
  const bool row_pairs = p.row_pairs && s.s_h == 1 && !pairs;
  const int64_t want_rows =
      std::clamp<int64_t>(std::max<int64_t>(p.task_pixels / s.ow, row_pairs ? 2 : 1), 1,
                          std::max<int64_t>(interior, 1));
  const int64_t row_blocks = std::max<int64_t>(1, (interior + want_rows - 1) / want_rows);
  const int64_t rows = (interior + row_blocks - 1) / row_blocks;
  // Row blocks outside channel blocks: a thread's share of the tasks is a band of rows, as in
  // the convs before and after it, so it reads rows its own core wrote.
  Expr t = te::MakeVar("t");
  Expr cb = te::FloorMod(t, Expr(blocks));
  Expr rb = te::FloorMod(te::FloorDiv(t, Expr(blocks)), Expr(row_blocks));
  Expr oh0 = rb * rows + row_lo;
  Expr n = te::FloorDiv(t, Expr(row_blocks * blocks));
  std::vector<Stmt> task;
  std::vector<Buffer> weights;
  // A task's weight and bias vectors, held once (or twice over for pixel pairs).
  auto task_vector = [&](const std::string& name, const Expr& value) {
    Buffer b = pairs ? NewFloatBuffer(name, 2 * block, lower::BufferScope::kLocal)
                     : NewVectorAccumulator(name, block);
    f.locals.push_back(b);
    task.push_back(lower::Store(b, 0, value));
    if (pairs) task.push_back(lower::Store(b, block, value));
    return b;
  };
  for (int64_t k = 0; plan.in_registers && k < taps; ++k) {
    weights.push_back(task_vector("wvec" + std::to_string(k),
                                  lower::VectorLoad(wb, (cb * taps + k) * block, lanes)));
  }
  // The bias depends on the channel only (OutputChannel): one load per task, not per pixel.
  Buffer bias;
  if (Expr bias_vector = BiasOnBlockVector(bias_at, n, cb, lanes); bias_vector.defined()) {
    bias = task_vector("bias", bias_vector);
  }
  RowContext ctx{s,  lanes, xb,    f.args.back().buffer,   weights, wb, bias, at, n,
                 cb, &f,    pairs, RowStreams(s, block, p)};
  auto border_rows = [&](int64_t begin, int64_t end) {
    std::vector<Stmt> v;
    for (const BorderRows& run : BorderRunsOf(s, begin, end)) {
      const std::string tag = "b" + std::to_string(run.begin);
      v.push_back(Range(tag, run.begin, run.end, lower::ForKind::kSerial,
                        [&](const Expr& oh) { return Row(ctx, tag, oh, run.taps, columns); }));
    }
    Stmt rows_stmt = SeqOf(v);
    if (!rows_stmt || row_blocks == 1) return rows_stmt;
    return lower::If(rb == Expr(begin == 0 ? 0 : row_blocks - 1), rows_stmt);
  };
  task.push_back(border_rows(0, row_lo));
  // Interior rows one at a time, or two at a time (the tile's accumulators split between them)
  // where the entry asks for row pairs and the rows overlap (stride 1); an odd row runs alone.
  const TapRows all_taps{0, s.kh};
  const bool past_end = row_blocks * rows > interior;  // the last task's rows run past row_hi
  const int64_t row_step = row_pairs && rows >= 2 ? 2 : 1;
  const int64_t pair_columns = PairColumns(s, registers, p, plan);
  task.push_back(Range("r", 0, rows / row_step, lower::ForKind::kSerial, [&](const Expr& r) {
    Expr oh = rows > 1 ? oh0 + r * row_step : oh0;
    if (row_step == 1) {
      Stmt row = Row(ctx, "i", oh, all_taps, columns);
      return past_end ? lower::If(oh < row_hi, row) : row;
    }
    Stmt both = Row(ctx, "p", oh, all_taps, pair_columns, 2);
    if (!past_end) return both;
    return lower::If(oh + 1 < row_hi, both,
                     lower::If(oh < row_hi, Row(ctx, "j", oh, all_taps, columns)));
  }));
  if (row_step == 2 && rows % 2 == 1) {
    Expr oh = oh0 + (rows - 1);
    Stmt row = Row(ctx, "o", oh, all_taps, columns);
    task.push_back(past_end ? lower::If(oh < row_hi, row) : row);
  }
  task.push_back(border_rows(row_hi, s.oh));

  const int64_t tasks = s.n * blocks * row_blocks;
  const int64_t work = s.n * s.c * s.oh * s.ow * taps;
  bool par = opts.parallel && work >= opts.parallel_min_work && tasks > 1;
  f.body =
      lower::For(t, tasks, par ? lower::ForKind::kParallel : lower::ForKind::kSerial, SeqOf(task));
  f.prefer_vector_bits =
      p.prefer_vector_bits > 0 ? static_cast<int>((pairs ? 2 : 1) * block * 32) : 0;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
