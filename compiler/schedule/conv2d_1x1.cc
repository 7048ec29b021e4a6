// 1x1 convolution (stride 1, no padding) as a matrix product over each image's flat plane:
// out[oc][q] = sum_ic w[oc][ic] * x[ic][q], q = oh * OW + ow.
//
// The register tile is `lanes` consecutive positions (SIMD vectors of `simd_lanes`) times
// `oc_block` output channels; every input channel adds one contiguous input row segment times a
// broadcast weight. Positions are the tile's outer index and channel blocks the inner one, so the
// input panel of a position tile stays in cache while every channel block reads it. Output rows
// are contiguous in NCHW, so the group's epilogue (bias, activation, residual) is applied to the
// accumulators before the single store: no padded copy, no intermediate result, one pass over
// the output. Big planes take this kernel; small ones go to the channels-in-lanes kernel.
#include <ember/compiler/ir/weight_layout.h>

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

struct GemmContext {
  const ConvShape& s;
  int64_t ocb;           // output channels per tile
  int64_t packed_block;  // > 1: weights stored [OC/B][IC][B] (PackConvWeights), else [OC][IC]
  Buffer x, w, out;
  const EpilogueAt& at;
  Expr n;
  lower::LoweredFunc* f;  // receives the accumulator locals
};

// Weight (oc0 + j, ic). With packed weights the block (a multiple of ocb) holds oc0..oc0+ocb-1
// side by side, so the tile's weights are consecutive floats.
Expr WeightIndex(const GemmContext& c, const Expr& oc0, int64_t j, const Expr& ic) {
  if (c.packed_block <= 1) return (oc0 + j) * c.s.icg + ic;
  const int64_t b = c.packed_block;
  return (te::FloorDiv(oc0, Expr(b)) * c.s.icg + ic) * b + te::FloorMod(oc0, Expr(b)) + j;
}

// The epilogue's value for channel oc at the `lanes` plane positions from q0, given the
// accumulator vector there: applied at (n, oc, 0, q) with q the flat plane position (valid when
// EpilogueReadsPlaneFlat holds). Undefined when the epilogue does not vectorise.
Expr EpilogueLanes(const GemmContext& c, const Expr& oc, const Expr& q0, int lanes,
                   const Expr& acc) {
  Expr q = te::MakeVar("q");
  return lower::VectorizeLanes(c.at({c.n, oc, Expr(0), q}, acc), q.get(), q0, lanes);
}

// One tile: `cols` vectors of `lanes` consecutive positions from q0, times output channels
// [oc0, oc0 + ocb).
Stmt MakeTile(const GemmContext& c, const std::string& tag, const Expr& oc0, const Expr& q0,
              int64_t cols, int lanes) {
  const ConvShape& s = c.s;
  const int64_t plane = s.oh * s.ow;
  Expr ic_v = te::MakeVar("ic");
  Expr ic = s.icg > 1 ? ic_v : Expr(0);
  Expr ic_in = s.group > 1 ? te::FloorDiv(oc0, Expr(s.ocg)) * s.icg + ic : ic;
  Expr x_row = (c.n * s.c + ic_in) * plane + q0;
  std::vector<Stmt> init, update, store;
  for (int64_t j = 0; j < c.ocb; ++j) {
    Expr wv = BufferLoad(c.w, WeightIndex(c, oc0, j, ic));  // broadcast against the inputs
    for (int64_t u = 0; u < cols; ++u) {
      Buffer a =
          NewVectorAccumulator("accg" + tag + std::to_string(j) + "_" + std::to_string(u), lanes);
      c.f->locals.push_back(a);
      init.push_back(lower::Store(a, 0, te::Const(a->dtype, 0)));
      update.push_back(lower::Store(
          a, 0, BufferLoad(a, 0) + lower::VectorLoad(c.x, x_row + u * lanes, lanes) * wv));
      Expr value = EpilogueLanes(c, oc0 + j, q0 + u * lanes, lanes, BufferLoad(a, 0));
      if (!value.defined())
        throw CompileError("conv2d_1x1: epilogue of " + c.f->name + " does not vectorise");
      store.push_back(
          lower::Store(c.out, ((c.n * s.oc + oc0 + j) * plane) + q0 + u * lanes, value));
    }
  }
  Stmt red = lower::Seq(update);
  if (s.icg > 1) red = lower::KeepScalarFor(ic_v, s.icg, red);
  std::vector<Stmt> tile = init;
  tile.push_back(red);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

}  // namespace

int64_t Conv1x1OcBlock(const ConvShape& s, int64_t most) {
  for (int64_t cand : {most, int64_t{4}, int64_t{2}, int64_t{1}}) {
    if (cand >= 1 && cand <= most && s.ocg % cand == 0) return cand;
  }
  return 1;
}

bool Conv1x1Applies(const ConvShape& s, const Conv2dParams& p) {
  return s.kh == 1 && s.kw == 1 && s.s_h == 1 && s.s_w == 1 && s.pad_t == 0 && s.pad_l == 0 &&
         s.oh == s.h && s.ow == s.w && s.oh * s.ow >= 4 * p.lanes;
}

bool TryConv2d1x1(const FusedGroup& group, const lower::ScheduleOptions& opts,
                  const Conv2dParams& p, lower::LoweredFunc* out) {
  ConvGroup m;
  if (!MatchConvGroup(group, &m) || !IsNchw(m.s) || !Conv1x1Applies(m.s, p)) return false;
  const ConvShape& s = m.s;
  const int64_t ocb = Conv1x1OcBlock(s, p.oc_block);
  const int64_t packed_block = m.conv->GetInt(kPackedWeightBlockAttr, 0);
  if (packed_block > 1 && packed_block % ocb != 0) return false;  // the default schedule reads it
  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  if (!BuildConvEpilogueAt(group, m, &f, &xb, &wb, &at)) return false;
  const Buffer& ob = f.args.back().buffer;
  Expr n = te::MakeVar("n");
  GemmContext ctx{s, ocb, packed_block, xb, wb, ob, at, n, &f};
  const int simd = p.lanes % p.simd_lanes == 0 ? p.simd_lanes : 1;
  Buffer probe = NewVectorAccumulator("probe", simd);
  if (!EpilogueReadsPlaneFlat(at, s.ow) ||
      !EpilogueLanes(ctx, Expr(0), Expr(0), simd, BufferLoad(probe, 0)).defined()) {
    return false;  // the channels-in-lanes kernel applies such epilogues in a pass of their own
  }
  const int64_t plane = s.oh * s.ow;
  const int64_t width = simd > 1 ? TunedConv2d1x1Width(group, opts, ocb, simd, p.lanes) : p.lanes;
  const int64_t full = plane / width, tail = plane % width, ocbs = s.oc / ocb;
  // The tail tile takes its positions one scalar column each.
  auto tile_loop = [&](int64_t q_tiles, int64_t cols, int lanes, int64_t q_base,
                       const std::string& tag) {
    Expr t = te::MakeVar("t");
    Expr q0 = te::FloorDiv(t, Expr(ocbs)) * (cols * lanes) + q_base;
    Expr oc0 = te::FloorMod(t, Expr(ocbs)) * ocb;
    const int64_t tiles = q_tiles * ocbs;
    bool par =
        opts.parallel && tiles > 1 && tiles * cols * lanes * ocb * s.icg >= opts.parallel_min_work;
    return lower::For(t, tiles, par ? ForKind::kParallel : ForKind::kSerial,
                      MakeTile(ctx, tag, oc0, q0, cols, lanes));
  };
  std::vector<Stmt> image{tile_loop(full, width / simd, simd, 0, "m")};
  if (tail > 0) image.push_back(tile_loop(1, tail, 1, full * width, "t"));
  f.body = lower::For(n, s.n, ForKind::kSerial, lower::Seq(image));
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
