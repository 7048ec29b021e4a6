// Register-blocked direct 2-D convolution with output channels in the vector lanes.
//
// The register tile is `ow_block` consecutive output columns of one output row times `oc_block`
// output channels (one to three SIMD vectors; an output block narrower than the target's vectors
// accumulates in the target's width and is stored a block at a time). For every (ic, kh, kw) the
// tile loads the packed weights of its channels (one aligned vector per `lanes` channels),
// broadcasts one input value per column and issues ow_block x oc_block/lanes FMAs: no unaligned
// loads, no garbage columns, any output width. With lane steps (AArch64), a pixel's channels of an
// NCHW[x]c input come in one vector load, each lane feeding its channel's FMAs, or else an NCHW
// row's columns closer than a vector apart share one; the columns then leave a register each for
// the loaded inputs. Weights are read as [OC/oc_block][IC/group][KH][KW][oc_block]: packed at
// compile time when the conv carries the attribute kPackedWeightBlockAttr (see
// pack_conv_weights.cc), otherwise packed by the kernel into a workspace on every call. Padded
// convolutions read a zero-padded copy of the image; unpadded ones read the input directly. The
// result is written in [N][OC/oc_block][OH][OW][oc_block] blocks, which the group's epilogue (bias,
// activation, residual) reads back into NCHW one block row at a time (BlockedEpilogue), or, for
// epilogues that read the conv result elsewhere than at the element they write, as the default
// schedule lowers it.
//
// NCHW[x]c (ember/compiler/ir/layout.h): a blocked input is read (and padded) in its layout, a
// pixel's x channels apart by one element and pixels by x; with weights packed with input
// channels blocked too (kPackedWeightIcBlockAttr) the reduction steps through one pixel's
// channels innermost. A blocked output (x = the vector width) takes each finished vector with the
// epilogue applied in registers straight into the output: no result workspace, no epilogue pass.
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/target.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_group.h"
#include "loop_builders.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::BufferScope;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

struct TileContext {
  const ConvShape& s;
  int64_t ocb;            // output channels per tile
  int lanes;              // channels per SIMD vector (ocb is a multiple)
  int64_t icc;            // input channels per reduction chunk (divides s.icg)
  int64_t chunks;         // reduction chunks (s.icg / icc)
  Buffer in;              // padded image or the input argument
  Expr in_base;           // element offset of image n in `in`
  int64_t in_h, in_w;     // plane size of `in`
  Buffer weights;         // packed [OC/ocb][ICg/wx][KH][KW][wx][ocb]
  int64_t wx;             // input channels per weight block (1, or the input's block)
  Buffer result;          // [N][OC/ocb][OH][OW][ocb], or the blocked output (see `at`)
  Expr n;                 // image
  lower::LoweredFunc* f;  // receives the accumulator locals
  // Blocked output only: the group's epilogue, applied to each vector before its final store.
  const EpilogueAt* at = nullptr;
  // > 0: each reduction step also prefetches the weights this many floats ahead.
  int64_t prefetch_ahead = 0;
  // Conv2dOcVecParams::lane_steps: equal to the input's block, a pixel's channels come in one
  // vector load and the channel loop is unrolled, a lane each.
  int lane_steps = 1;
  // Channels per accumulator vector: `lanes`, or more when the output's blocks are narrower
  // than the target's vectors (see AccumulatorLanes).
  int64_t piece_lanes = 0;
  // Input-channel loop iterations per pass where they divide its count (> 1 only for a one-pixel
  // output, see ChannelUnroll).
  int64_t channel_unroll = 1;
};

// A one-pixel output (Conv2dOcVecParams::single_pixel_vectors) whose channels make a panel of
// at most half that many vectors: the input-channel loop runs as many of its iterations per pass
// as keep the pass within a full panel's FMAs, so the loop control and the input loads weigh
// less (a 24-channel squeeze, 6 vectors: 24 FMAs against 17 other instructions per pass, 48
// against 29 with two). Wider passes put the weights beyond the paired loads' reach. 1 otherwise.
int64_t ChannelUnroll(const ConvShape& s, int64_t ocb, const Conv2dOcVecParams& p) {
  const int64_t vectors = ocb / p.lanes;
  if (p.single_pixel_vectors <= 0 || s.oh * s.ow != 1 || vectors >= p.single_pixel_vectors) {
    return 1;
  }
  return p.single_pixel_vectors / vectors;
}

// Channels [first, first + lanes) of a column's tile in one accumulator.
struct AccumulatorPiece {
  Buffer buf;
  int64_t first;
  int lanes;
};

// Channels per pixel in the input's layout: 1 for NCHW, the block for NCHW[x]c.
int64_t InputUnit(const ConvShape& s) { return std::max<int64_t>(1, s.in_block); }

// Element offset in `result` of tile vector `vec` (channels ob * ocb + vec * lanes on) at
// (oh, ow): the kernel's private blocking, or the NCHW[lanes]c output itself.
Expr ResultOffset(const TileContext& c, const Expr& ob, int64_t vec, const Expr& oh,
                  const Expr& ow) {
  const ConvShape& s = c.s;
  if (s.out_block != 0) {
    Expr cb = ob * (c.ocb / c.lanes) + vec;
    return (((c.n * (s.oc / c.lanes) + cb) * s.oh + oh) * s.ow + ow) * c.lanes;
  }
  return (((c.n * (s.oc / c.ocb) + ob) * s.oh + oh) * s.ow + ow) * c.ocb + vec * c.lanes;
}

// The value a finished accumulator vector stores: itself, or with the epilogue applied (blocked
// output; lane k is channel (ob * ocb / lanes + vec) * lanes + k).
Expr Finished(const TileContext& c, const Expr& ob, int64_t vec, const Expr& oh, const Expr& ow,
              const Expr& acc) {
  if (c.at == nullptr) return acc;
  return EpilogueOnBlockVector(*c.at, c.n, ob * (c.ocb / c.lanes) + vec, oh, ow, acc, c.lanes);
}

// One tile: `rows` output rows from oh times `width` columns from ow0, channels
// [ob*ocb, ob*ocb + ocb), input channels of reduction chunk `chunk` (partial sums of earlier
// chunks are in the result already). With `sums` > 1 (TilePartialSums), each accumulator is
// `sums` independent ones over interleaved lanes of the input's blocks, added before the store.
Stmt MakeTile(const TileContext& c, const std::string& tag, const Expr& ob, const Expr& oh,
              int64_t rows, const Expr& ow0, int64_t width, const Expr& chunk, int64_t sums = 1) {
  const ConvShape& s = c.s;
  Expr ic_v = te::MakeVar("ic"), kh_v = te::MakeVar("kh"), kw_v = te::MakeVar("kw");
  Expr ici_v = te::MakeVar("ici");
  const int64_t unit = InputUnit(s);
  // With weights blocked like the input, the innermost loop steps through one pixel's channels:
  // the broadcasts stay on the tile's cache lines and the weights are read contiguously.
  const bool split = c.wx > 1 && c.icc % c.wx == 0;
  const int64_t ic_outer = split ? c.icc / unit : c.icc;
  Expr ic = chunk * c.icc + (ic_outer > 1 ? (split ? ic_v * unit : ic_v) : Expr(0));
  if (split) ic = ic + ici_v;
  Expr kh = s.kh > 1 ? kh_v : Expr(0);
  Expr kw = s.kw > 1 ? kw_v : Expr(0);
  Expr ic_in = s.group > 1 ? te::FloorDiv(ob * c.ocb, Expr(s.ocg)) * s.icg + ic : ic;
  // NCHW[x]c input: pixel offsets scale by x and the channel splits into block and lane; weights
  // packed with input channels blocked (wx > 1: then wx == x and group == 1) split it alike.
  Expr in_plane = ic_in, lane;
  if (split) {
    in_plane = chunk * (c.icc / unit) + (ic_outer > 1 ? ic_v : Expr(0));
    lane = ici_v;
  } else if (unit > 1) {
    in_plane = te::FloorDiv(ic_in, Expr(unit));
    lane = te::FloorMod(ic_in, Expr(unit));
  }
  // Tap (kh, kw) reads the pixel kh * d_h rows and kw * d_w columns from the window's corner.
  Expr tap_row = s.d_h > 1 ? kh * s.d_h : kh, tap_col = s.d_w > 1 ? kw * s.d_w : kw;
  Expr pixel = (in_plane * c.in_h + oh * s.s_h + tap_row) * c.in_w + tap_col;
  Expr row = lane.defined() ? c.in_base + pixel * unit + lane : c.in_base + pixel;
  Expr w_base = (((ob * s.icg + ic) * s.kh + kh) * s.kw + kw) * c.ocb;
  if (c.wx > 1) {
    w_base = (((((ob * (s.icg / c.wx) + in_plane) * s.kh + kh) * s.kw + kw) * c.wx) + lane) * c.ocb;
  }
  // Lane steps: the unrolled channel loop's step j reads lane j of one load per pixel.
  const int steps = split && c.lane_steps == unit ? c.lane_steps : 1;
  auto at_lane = [&](const Expr& e, int64_t j) {
    return steps > 1 ? lower::Substitute(e, {{ici_v.get(), Expr(j)}}) : e;
  };
  std::vector<Stmt> init, resume, update, partial, store, gather;
  std::vector<AccumulatorPiece> pieces;
  // extra[q][i]: partial sum q + 1 of pieces[i].
  std::vector<std::vector<AccumulatorPiece>> extra(sums - 1);
  std::vector<Expr> xs;
  for (int64_t rr = 0; rr < rows; ++rr) {
    // Without, lane steps let the row's columns closer than a vector apart share its loads.
    std::vector<Expr> columns;
    if (steps == 1 && c.lane_steps > 1) {
      std::vector<int64_t> offsets;
      for (int64_t r = 0; r < width; ++r) offsets.push_back(r * s.s_w * unit);
      Expr first = row + (rr * s.s_h * c.in_w + ow0 * s.s_w) * unit;
      columns = CoveringLanes(c.in, first, offsets, c.lane_steps);
    }
    for (int64_t r = 0; r < width; ++r) {
      Expr step = rr * s.s_h * c.in_w + (ow0 + r) * s.s_w;
      xs.push_back(
          columns.empty()
              ? lower::VectorLoad(c.in, at_lane(row, 0) + (unit > 1 ? step * unit : step), steps)
              : columns[r]);
      // The column's accumulators: a vector per block, or (piece_lanes wider than a block)
      // pieces of piece_lanes channels, each stored a block at a time.
      const std::string name = "acc" + tag + std::to_string(rr * width + r);
      for (int64_t first = 0; first < c.ocb; first += c.piece_lanes) {
        const int lanes = static_cast<int>(std::min(c.piece_lanes, c.ocb - first));
        const bool whole = lanes == c.lanes;  // one block: a vector local
        const std::string piece = name + "_" + std::to_string(first / c.lanes);
        auto accumulator = [&](const std::string& local) {
          Buffer a = whole ? NewVectorAccumulator(local, lanes)
                           : NewFloatBuffer(local, lanes, BufferScope::kLocal);
          c.f->locals.push_back(a);
          init.push_back(lower::Store(a, 0, te::Const(te::WithLanes(te::Float(32), lanes), 0)));
          return AccumulatorPiece{a, first, lanes};
        };
        pieces.push_back(accumulator(piece));
        const Buffer a = pieces.back().buf;
        for (int64_t q = 1; q < sums; ++q) {
          extra[q - 1].push_back(accumulator(piece + "_s" + std::to_string(q)));
          const Buffer e = extra[q - 1].back().buf;
          Expr sum = whole ? BufferLoad(a, 0) + BufferLoad(e, 0)
                           : lower::VectorLoad(a, 0, lanes) + lower::VectorLoad(e, 0, lanes);
          gather.push_back(lower::Store(a, 0, sum));
          // A resumed chunk starts the main sum from the result and the others from zero.
          resume.push_back(init.back());
        }
        for (int64_t v = first; v < first + lanes; v += c.lanes) {
          const int64_t at = v - first;
          Expr value = whole ? BufferLoad(a, 0) : lower::VectorLoad(a, at, c.lanes);
          const int64_t block = v / c.lanes;
          Expr dst = ResultOffset(c, ob, block, oh + rr, ow0 + r);
          resume.push_back(lower::Store(a, at, lower::VectorLoad(c.result, dst, c.lanes)));
          partial.push_back(lower::Store(c.result, dst, value));
          store.push_back(
              lower::Store(c.result, dst, Finished(c, ob, block, oh + rr, ow0 + r, value)));
        }
      }
    }
  }
  // The input value is broadcast against a vector of packed weights (step-major, so each step's
  // weights are loaded once for the tile).
  const size_t per_column = pieces.size() / xs.size();
  // Partial sum q takes lanes ici * sums + q of the input's blocks.
  auto for_sum = [&](const Expr& e, int64_t q) {
    return sums > 1 ? lower::Substitute(e, {{ici_v.get(), ici_v * sums + q}}) : e;
  };
  for (int64_t q = 0; q < sums; ++q) {
    const std::vector<AccumulatorPiece>& accs = q == 0 ? pieces : extra[q - 1];
    for (int j = 0; j < steps; ++j) {
      for (size_t i = 0; i < xs.size(); ++i) {
        Expr x = StepValue(for_sum(xs[i], q), j);
        for (size_t k = 0; k < per_column; ++k) {
          const AccumulatorPiece& a = accs[i * per_column + k];
          Expr w = lower::VectorLoad(c.weights, for_sum(at_lane(w_base, j), q) + a.first, a.lanes);
          Expr sum =
              a.lanes == c.lanes ? BufferLoad(a.buf, 0) : lower::VectorLoad(a.buf, 0, a.lanes);
          update.push_back(lower::Store(a.buf, 0, sum + x * w));
        }
      }
    }
  }
  if (c.prefetch_ahead > 0) {
    PrefetchFloats(c.weights, at_lane(w_base, 0) + c.prefetch_ahead, c.ocb * steps, &update);
  }
  Stmt red = lower::Seq(update);
  if (split && steps == 1) red = lower::KeepScalarFor(ici_v, unit / sums, red);
  red = lower::KeepScalarFor(kw_v, s.kw, red);
  red = lower::KeepScalarFor(kh_v, s.kh, red);
  const int64_t unroll = ic_outer % c.channel_unroll == 0 ? c.channel_unroll : 1;
  if (unroll > 1) {  // ic_v = ic_u * unroll + k: `unroll` copies per iteration
    Expr ic_u = te::MakeVar("icu");
    std::vector<Stmt> copies;
    for (int64_t k = 0; k < unroll; ++k) {
      copies.push_back(lower::SubstituteVar(red, ic_v, ic_u * unroll + k));
    }
    red = lower::KeepScalarFor(ic_u, ic_outer / unroll, lower::Seq(copies));
  } else {
    red = lower::KeepScalarFor(ic_v, ic_outer, red);
  }
  std::vector<Stmt> tile;
  if (c.chunks == 1) {
    tile = init;
  } else {
    tile.push_back(lower::If(chunk == Expr(0), lower::Seq(init), lower::Seq(resume)));
  }
  tile.push_back(red);
  tile.insert(tile.end(), gather.begin(), gather.end());
  if (c.at != nullptr && c.chunks > 1) {
    // Earlier chunks leave raw partial sums in the output; the last one applies the epilogue.
    tile.push_back(lower::If(chunk == Expr(c.chunks - 1), lower::Seq(store), lower::Seq(partial)));
  } else {
    tile.insert(tile.end(), store.begin(), store.end());
  }
  return lower::Seq(tile);
}

// FMAs a core keeps in flight (4 cycles of latency x 2 pipes on the x86 and the big ARM cores):
// a tile with fewer accumulators waits on each one's previous FMA (a one-column tail tile of two
// vectors took 4 cycles per reduction step where a 6-column tile takes 6 for 6 pixels).
constexpr int64_t kFmasInFlight = 8;

// Partial sums per accumulator of a tile with `accumulators` vectors (MakeTile's `sums`): doubled
// until the FMAs in flight find independent accumulators, within `registers` accumulator
// registers and the lanes of the input's blocks, which the sums interleave over. 1 where the
// reduction does not step through a block's lanes one at a time.
int64_t TilePartialSums(const TileContext& c, int64_t accumulators, int64_t registers) {
  const int64_t unit = InputUnit(c.s);
  const bool split = c.wx > 1 && c.icc % c.wx == 0;
  if (!split || c.lane_steps == unit) return 1;
  int64_t sums = 1;
  while (sums * accumulators < kFmasInFlight && 2 * sums * accumulators <= registers &&
         unit % (2 * sums) == 0) {
    sums *= 2;
  }
  return sums;
}

// A grid of equal single-row tiles over every output row: `tiles_per_row` tiles of `width`
// columns from column ow0, each accumulator in `sums` partial sums.
struct TileGrid {
  std::string tag;
  int64_t tiles_per_row, width, ow0, sums;
};

// Packs OIHW weights into [OC/ocb][ICg][KH][KW][ocb] (when emberc did not at compile time).
Stmt PackWeights(const ConvShape& s, int64_t ocb, const Buffer& w, const Buffer& packed,
                 const lower::ScheduleOptions& opts) {
  const int64_t red = s.icg * s.kh * s.kw;
  Expr ob = te::MakeVar("ob"), r = te::MakeVar("r"), v = te::MakeVar("v");
  Stmt st = lower::Store(packed, (ob * red + r) * ocb + v, BufferLoad(w, (ob * ocb + v) * red + r));
  st = lower::For(v, ocb, ForKind::kSerial, st);
  st = lower::For(r, red, ForKind::kSerial, st);
  bool par = opts.parallel && s.oc * red >= opts.parallel_min_work && s.oc / ocb > 1;
  return lower::For(ob, s.oc / ocb, par ? ForKind::kParallel : ForKind::kSerial, st);
}

// Bytes of the blocked result one epilogue task reads (its rows of one channel block): kept in
// L1 while the task writes each channel's rows.
constexpr int64_t kEpilogueSliceBytes = 16 * 1024;

// The group's output from the blocked result, one (channel block, chunk of output rows) per
// task: the task's slice of the result stays in L1 while each channel's rows are written
// contiguously, instead of a gather from across the whole result per output element. When the
// epilogue reads every operand plane-flat (EpilogueReadsPlaneFlat), a task's rows are one loop
// over flat positions (long enough to vectorise on small planes); otherwise one loop per row.
Stmt BlockedEpilogue(const ConvShape& s, int64_t ocb, const Buffer& result, const Buffer& out,
                     const EpilogueAt& at, const Expr& n, const lower::ScheduleOptions& opts) {
  const int64_t ocbs = s.oc / ocb, plane = s.oh * s.ow;
  const bool flat = EpilogueReadsPlaneFlat(at, s.ow);
  int64_t rows = 1;
  if (flat) {
    rows = std::max<int64_t>(1, std::min(s.oh, kEpilogueSliceBytes / (s.ow * ocb * 4)));
    while (s.oh % rows != 0) --rows;
  }
  const int64_t chunks = s.oh / rows;
  Expr t = te::MakeVar("t"), v = te::MakeVar("v");
  Expr ob = te::FloorDiv(t, Expr(chunks)), oh0 = te::FloorMod(t, Expr(chunks)) * rows;
  Expr oc = ob * ocb + v;
  Stmt st;
  if (flat) {
    Expr q = te::MakeVar("q");  // flat position within the task's rows
    Expr pos = oh0 * s.ow + q;
    Expr acc = BufferLoad(result, ((n * ocbs + ob) * plane + pos) * ocb + v);
    st = lower::Store(out, (n * s.oc + oc) * plane + pos, at({n, oc, Expr(0), pos}, acc));
    st = lower::For(q, rows * s.ow, ForKind::kVectorized, st);
  } else {
    Expr ow = te::MakeVar("ow");
    Expr acc = BufferLoad(result, (((n * ocbs + ob) * s.oh + oh0) * s.ow + ow) * ocb + v);
    st = lower::Store(out, ((n * s.oc + oc) * s.oh + oh0) * s.ow + ow, at({n, oc, oh0, ow}, acc));
    st = lower::For(ow, s.ow, ForKind::kVectorized, st);
  }
  st = lower::For(v, ocb, ForKind::kSerial, st);
  const int64_t tasks = ocbs * chunks;
  bool par = opts.parallel && tasks > 1 && s.oc * plane >= opts.parallel_min_work;
  return lower::For(t, tasks, par ? ForKind::kParallel : ForKind::kSerial, st);
}

// A small plane's tasks: each channel block's row groups (and the rows after the last, `tail`)
// in `tasks_per_block` tasks of `groups_per_task` groups.
struct RowSplit {
  int64_t tasks_per_block, groups_per_task;
};

// One task per channel block fetches the block's weights once; where the blocks are fewer than
// kMinTasks (MobileNetV2's 160-channel 7x7 convs have 5: three blocks' time on one thread of
// two, the other idle for one), each block's row groups split between tasks that each fetch them.
RowSplit SplitRowGroups(int64_t blocks, int64_t groups, bool tail, bool parallel) {
  const int64_t units = groups + (tail ? 1 : 0);
  if (!parallel || blocks >= kMinTasks || units < 2) return {1, groups};
  const int64_t wanted = std::min(units, (kMinTasks + blocks - 1) / blocks);
  const int64_t per_task = (units + wanted - 1) / wanted;
  return {(units + per_task - 1) / per_task, per_task};
}

int64_t AccumulatorLanes(const Conv2dOcVecParams& entry, const Conv2dOcVecParams& blocked,
                         int64_t ocb) {
  // Output blocks narrower than the target's vectors (24 channels in 8-wide blocks on AVX-512)
  // accumulate a column's channels in vectors as wide as the target's and a power of two, the
  // rest in a block's (16 + 8 lanes: two FMAs per step where three 8-wide ones ran at half
  // width); each finished vector is stored a block at a time. LLVM widens a 24-lane vector to
  // 32 and shuffles it lane by lane.
  int64_t lanes = blocked.lanes;
  while (lanes * 2 <= std::min(entry.lanes, ocb)) lanes *= 2;
  return lanes;
}

}  // namespace

Conv2dOcVecParams BlockedOcVecParams(const Conv2dOcVecParams& p, const ConvShape& s) {
  if (s.out_block < kMinLayoutBlock || s.out_block >= p.lanes || p.lanes % s.out_block != 0) {
    return p;
  }
  Conv2dOcVecParams narrow = p;
  narrow.lanes = s.out_block;
  if (p.prefer_vector_bits > 0) narrow.prefer_vector_bits = static_cast<int>(s.out_block * 32);
  return narrow;
}

int64_t OcVecOcBlock(const ConvShape& s, const Conv2dOcVecParams& p) {
  if (p.lanes <= 0 || s.ocg % p.lanes != 0) return 0;
  if (p.oc_vectors < 2) return p.lanes;
  if (p.single_pixel_vectors > p.oc_vectors && s.oh * s.ow == 1) {
    for (int64_t vectors = p.single_pixel_vectors; vectors > p.oc_vectors; --vectors) {
      if (s.ocg % (vectors * p.lanes) == 0) return vectors * p.lanes;
    }
  }
  // Two vectors, else three (24 channels in 8-wide blocks, 144 in 16-wide: a one-vector tile
  // loads a weight vector and a broadcast per pixel for every FMA pair).
  for (int64_t vectors : {int64_t{2}, int64_t{3}}) {
    if (s.ocg % (vectors * p.lanes) == 0) return vectors * p.lanes;
  }
  return p.lanes;
}

int64_t OcVecTileOcBlock(const ConvShape& s, const Conv2dOcVecParams& entry) {
  const Conv2dOcVecParams p = BlockedOcVecParams(entry, s);
  const int64_t ocb = OcVecOcBlock(s, p);
  if (ocb != p.lanes || p.lanes >= entry.lanes) return ocb;
  for (int64_t blocks = 3 * entry.lanes / p.lanes; blocks > 1; --blocks) {
    if (s.ocg % (blocks * p.lanes) == 0) return blocks * p.lanes;
  }
  return ocb;
}

int64_t OcVecOwBlock(const Conv2dOcVecParams& p, int64_t vectors) {
  // The entry's width is for its oc_vectors; three vectors keep about as many accumulators.
  return vectors > p.oc_vectors ? std::max<int64_t>(1, p.ow_block * p.oc_vectors / vectors)
                                : p.ow_block;
}

int64_t ChooseOwBlock(int64_t ow, int64_t most) {
  most = std::min(ow, most);
  for (int64_t cand = most; cand * 2 >= most; --cand) {
    if (ow % cand == 0) return cand;
  }
  return most;
}

ConvShape OcVecTileShape(const ConvShape& s, int64_t ow_block, bool epilogue_reads_flat,
                         const Target* target) {
  const bool reads_plane_in_order = s.kh == 1 && s.kw == 1 && s.s_h == 1 && s.s_w == 1 &&
                                    s.pad_t == 0 && s.pad_l == 0 && s.oh == s.h && s.ow == s.w;
  const int64_t owb = ChooseOwBlock(s.ow, ow_block);
  const bool row_tails = s.ow > owb && s.ow % owb != 0;
  if (!reads_plane_in_order || !row_tails || !epilogue_reads_flat || target == nullptr ||
      CacheRowChunk(s, *target) != s.oh) {
    return s;
  }
  ConvShape flat = s;
  flat.h = flat.oh = 1;
  flat.w = flat.ow = s.oh * s.ow;
  return flat;
}

bool TryConv2dOcVec(const FusedGroup& group, const lower::ScheduleOptions& opts,
                    const Conv2dOcVecParams& entry, lower::LoweredFunc* out) {
  ConvGroup m;
  if (!MatchConvGroup(group, &m)) return TryConv2dWinograd(group, opts, entry, out);
  const ConvShape& s = m.s;
  const Conv2dOcVecParams p = BlockedOcVecParams(entry, s);
  const int64_t ocb = OcVecTileOcBlock(s, entry);
  if (ocb == 0) return false;
  // NCHW[x]c output: one vector is one block of the output, so x must be the vector width.
  if (s.out_block != 0 && s.out_block != p.lanes) return false;
  const int64_t piece_lanes = AccumulatorLanes(entry, p, ocb);
  const bool wide = piece_lanes > p.lanes;
  // Accumulator vectors per column.
  const int64_t vectors = (ocb + piece_lanes - 1) / piece_lanes;
  lower::LoweredFunc f;
  Buffer result, xb, wb;
  // The epilogue as an expression per element runs in the cache-friendly order of
  // BlockedEpilogue; the default lowering (output order, a gather per element) is the fallback.
  EpilogueAt at;
  const bool own_epilogue = BuildConvEpilogueAt(group, m, &f, &xb, &wb, &at);
  const bool blocked_out = s.out_block != 0;
  // The tiles' view of the conv (`ts`): its own shape, or one row of the whole plane. The
  // epilogue, the result's blocks and the weights keep the conv's (`s`).
  const ConvShape ts = OcVecTileShape(
      s, OcVecOwBlock(entry, vectors),
      !blocked_out || (own_epilogue && EpilogueReadsBlockPlaneFlat(at, s.ow)), opts.target);
  const OcVecBlocking blocking =
      TunedConv2dOcVecBlocking(ts, opts, vectors, ocb, OcVecOwBlock(entry, vectors));
  const int64_t packed_block = m.conv->GetInt(kPackedWeightBlockAttr, 0);
  if (packed_block != 0 && packed_block != ocb) return false;  // the default schedule reads it
  const bool prepacked = packed_block == ocb;
  const int64_t wx =
      prepacked ? std::max<int64_t>(1, m.conv->GetInt(kPackedWeightIcBlockAttr, 1)) : 1;
  if (wx > 1 && wx != InputUnit(s)) return false;
  // Lane steps keep a vector of a pixel's channels live per column besides its accumulators.
  const int64_t most_columns =
      p.lane_steps > 1 && wx == p.lane_steps
          ? std::min(blocking.ow_block, LaneTileRows(TargetVectorRegisters(opts), vectors))
          : blocking.ow_block;
  const int64_t owb = ChooseOwBlock(ts.ow, most_columns);
  const int64_t rows = blocking.row_chunk;  // divides ts.oh

  const int64_t full = ts.ow / owb, tail = ts.ow % owb;
  const int64_t ph = (s.oh - 1) * s.s_h + SpanH(s), pw = (s.ow - 1) * s.s_w + SpanW(s);
  const bool padded_input = s.pad_t > 0 || s.pad_l > 0 || ph > s.h || pw > s.w;
  if (padded_input && s.c * ph * pw > (int64_t{1} << 28)) return false;

  const int64_t ocbs = s.oc / ocb;
  auto blocked = [&](const std::vector<Expr>& i) {
    return (((i[0] * ocbs + te::FloorDiv(i[1], Expr(ocb))) * s.oh + i[2]) * s.ow + i[3]) * ocb +
           te::FloorMod(i[1], Expr(ocb));
  };
  if (blocked_out) {
    // The tiles store straight into the output with the epilogue in registers.
    if (!own_epilogue || !EpilogueVectorizes(at, static_cast<int>(p.lanes))) return false;
    result = f.args.back().buffer;
  } else if (own_epilogue) {
    result = NewFloatBuffer(m.conv->name + "_result_ws", s.n * s.oc * s.oh * s.ow,
                            BufferScope::kWorkspace);
    f.workspaces.push_back(result);
  } else if (!LowerConvEpilogue(group, m, s.n * s.oc * s.oh * s.ow, blocked, opts, &f, &result, &xb,
                                &wb)) {
    return false;
  }
  std::vector<Stmt> body;
  Buffer weights = wb;
  if (!prepacked) {
    weights = NewFloatBuffer(m.conv->name + "_packed_w_ws", s.oc * s.icg * s.kh * s.kw,
                             BufferScope::kWorkspace);
    f.workspaces.push_back(weights);
    body.push_back(PackWeights(s, ocb, wb, weights, opts));
  }
  Buffer padded;
  if (padded_input) {
    padded = NewFloatBuffer(m.conv->name + "_padded_ws", s.c * ph * pw, BufferScope::kWorkspace);
    f.workspaces.push_back(padded);
  }
  Expr n = te::MakeVar("n");
  // Earlier reduction chunks park float partial sums in a blocked output; one of another dtype
  // (float16, int32: the epilogue narrows or casts on the store) cannot hold them, so its
  // reduction runs as one chunk.
  const bool float_out = group.graph->value(group.outputs[0]).type.dtype == kFloat32;
  const int64_t ic_chunk = blocked_out && !float_out ? s.icg : blocking.ic_chunk;
  const int64_t chunks = s.icg / ic_chunk;
  TileContext ctx{ts,
                  ocb,
                  static_cast<int>(p.lanes),
                  ic_chunk,
                  chunks,
                  padded_input ? padded : xb,
                  padded_input ? Expr(0) : n * (s.c * s.h * s.w),
                  padded_input ? ph : ts.h,
                  padded_input ? pw : ts.w,
                  weights,
                  wx,
                  result,
                  n,
                  &f,
                  blocked_out ? &at : nullptr,
                  0,
                  p.lane_steps,
                  piece_lanes,
                  ChannelUnroll(ts, ocb, p)};
  std::vector<Stmt> image;
  if (padded_input) image.push_back(PadConvInput(s, xb, padded, n, ph, pw, opts));
  // Narrow outputs take several rows per tile, so each weight load feeds more FMAs.
  const int64_t tile_rows =
      owb == ts.ow ? std::max<int64_t>(1, std::min(ts.oh, most_columns / ts.ow)) : 1;
  // Tiles run chunk-major: every channel block reads a chunk of `rows` output rows' input while
  // it is in cache, then the next chunk.
  // The reduction runs in `chunks` parts over input channels (see OcVecBlocking::ic_chunk).
  Expr ic_part = chunks > 1 ? te::MakeVar("icp") : Expr(0);
  auto over_parts = [&](Stmt body) {
    return chunks > 1 ? lower::For(ic_part, chunks, ForKind::kSerial, std::move(body)) : body;
  };
  // Partial sums for a tile of `pixels` columns.
  auto partial_sums = [&](int64_t pixels) {
    return TilePartialSums(ctx, pixels * vectors, TargetVectorRegisters(opts) - 4);
  };
  auto tile_loop = [&](const TileGrid& g) {
    const int64_t per_ob = rows * g.tiles_per_row, per_chunk = ocbs * per_ob;
    Expr t = te::MakeVar("t");
    Expr chunk = te::FloorDiv(t, Expr(per_chunk));
    Expr in_chunk = te::FloorMod(t, Expr(per_chunk));
    Expr ob = te::FloorDiv(in_chunk, Expr(per_ob));
    Expr rest = te::FloorMod(in_chunk, Expr(per_ob));
    Expr oh =
        chunk * rows + (g.tiles_per_row > 1 ? te::FloorDiv(rest, Expr(g.tiles_per_row)) : rest);
    Expr ow0 = g.tiles_per_row > 1 ? te::FloorMod(rest, Expr(g.tiles_per_row)) * g.width + g.ow0
                                   : Expr(g.ow0);
    const int64_t tiles = (ts.oh / rows) * per_chunk;
    const int64_t work = tiles * g.width * ocb * ctx.icc * s.kh * s.kw;
    bool par = opts.parallel && tiles > 1 && work >= opts.parallel_min_work;
    return lower::For(t, tiles, par ? ForKind::kParallel : ForKind::kSerial,
                      MakeTile(ctx, g.tag, ob, oh, 1, ow0, g.width, ic_part, g.sums));
  };
  const int64_t groups = ts.oh / tile_rows, row_tail = ts.oh % tile_rows;
  if (tile_rows == 1) {
    std::vector<Stmt> grids{tile_loop(TileGrid{"m", full, owb, 0, partial_sums(owb)})};
    if (tail > 0) {
      grids.push_back(tile_loop(TileGrid{"t", 1, tail, full * owb, partial_sums(tail)}));
    }
    image.push_back(over_parts(lower::Seq(grids)));
  } else {
    // Small planes: one task per channel block runs all its row groups and the leftover rows
    // (or a share of them, SplitRowGroups), so the block's weights (often larger than L2 in
    // total) are fetched once, not twice; with a chunked reduction, each chunk's weights stay
    // in L1 across the row groups. Every row group streams the chunk's weights from L1; the first
    // would wait for them from memory (a small plane does little work per weight), so each step
    // fetches the same weights of the next chunk (the next channel block's first, after the last
    // chunk) meanwhile.
    ctx.prefetch_ahead = ctx.icc * s.kh * s.kw * ocb;
    const int64_t work = s.oh * s.ow * s.oc * s.icg * s.kh * s.kw;
    const bool par = opts.parallel && work >= opts.parallel_min_work;
    const RowSplit split = SplitRowGroups(ocbs, groups, row_tail > 0, par);
    // One task a block: ob is the task, part 0 (te folds the division and the modulo by 1).
    Expr task = te::MakeVar("ob"), grp = te::MakeVar("g");
    Expr ob = te::FloorDiv(task, Expr(split.tasks_per_block));
    Expr part = te::FloorMod(task, Expr(split.tasks_per_block));
    Expr first = part * split.groups_per_task;
    Stmt tile = MakeTile(ctx, "m", ob, (first + grp) * tile_rows, tile_rows, 0, owb, ic_part,
                         partial_sums(tile_rows * owb));
    if (split.groups_per_task * split.tasks_per_block > groups) {
      tile = lower::If(first + grp < Expr(groups), tile);
    }
    std::vector<Stmt> per_part{lower::For(grp, split.groups_per_task, ForKind::kSerial, tile)};
    if (row_tail > 0) {
      Stmt tail = MakeTile(ctx, "r", ob, Expr(groups * tile_rows), row_tail, 0, owb, ic_part,
                           partial_sums(row_tail * owb));
      if (split.tasks_per_block > 1) {  // the block's last task takes the tail rows
        tail = lower::If(part == Expr(split.tasks_per_block - 1), tail);
      }
      per_part.push_back(tail);
    }
    const int64_t tasks = ocbs * split.tasks_per_block;
    image.push_back(lower::For(task, tasks,
                               par && tasks > 1 ? ForKind::kParallel : ForKind::kSerial,
                               over_parts(lower::Seq(per_part))));
  }
  if (own_epilogue && !blocked_out)
    image.push_back(BlockedEpilogue(s, ocb, result, f.args.back().buffer, at, n, opts));
  body.push_back(lower::For(n, s.n, ForKind::kSerial, lower::Seq(image)));
  if (!own_epilogue) body.push_back(f.body);
  f.body = lower::Seq(body);
  f.prefer_vector_bits = wide ? entry.prefer_vector_bits : p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
