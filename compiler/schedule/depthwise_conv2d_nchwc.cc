// Depthwise 2-D convolution in NCHW[x]c with its epilogue fused.
//
// In the blocked layout the x channels of one pixel are one SIMD vector, and a depthwise conv
// multiplies each pixel's vector by the tap's weight vector (weights packed [C/x][KH][KW][x]):
// no shuffles, no row copies. One parallel task is (image, channel block, output row). The row
// runs in tiles of `columns` output pixels whose accumulators stay in registers (independent FMA
// chains); only the few border pixels, whose taps can fall into the padding, test their columns,
// and each tap row is tested once per tile. The epilogue is applied to each finished vector
// before its one store.
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
  std::vector<Buffer> weights;  // one vector local per tap, loaded once per task
  const EpilogueAt& at;         // the group's epilogue per element of the blocked output
  Expr n, cb, oh;               // the task
  lower::LoweredFunc* f;        // receives the accumulator locals
};

// `count` output pixels from column ow0 of the task's row. With check_columns, taps left or right
// of the image are skipped per pixel (border pixels); taps above or below it per tap row.
Stmt Pixels(const RowContext& c, const std::string& tag, const Expr& ow0, int64_t count,
            bool check_columns) {
  const ConvShape& s = c.s;
  const Expr image = c.n * (s.c / c.lanes) + c.cb;
  std::vector<Buffer> acc;
  std::vector<Stmt> body;
  for (int64_t t = 0; t < count; ++t) {
    acc.push_back(NewVectorAccumulator("acc" + tag + std::to_string(t), c.lanes));
    c.f->locals.push_back(acc.back());
    body.push_back(lower::Store(acc.back(), 0, te::Const(acc.back()->dtype, 0)));
  }
  for (int64_t kh = 0; kh < s.kh; ++kh) {
    Expr ih = c.oh * s.s_h + (kh - s.pad_t);
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      for (int64_t t = 0; t < count; ++t) {
        Expr iw = (ow0 + t) * s.s_w + (kw - s.pad_l);
        Expr in = lower::VectorLoad(c.x, ((image * s.h + ih) * s.w + iw) * c.lanes, c.lanes);
        Stmt fma = lower::Store(
            acc[t], 0, BufferLoad(acc[t], 0) + in * BufferLoad(c.weights[kh * s.kw + kw], 0));
        taps.push_back(check_columns ? lower::If((iw >= 0) && (iw < s.w), fma) : fma);
      }
    }
    body.push_back(lower::If((ih >= 0) && (ih < s.h), lower::Seq(taps)));
  }
  for (int64_t t = 0; t < count; ++t) {
    Expr ow = ow0 + t;
    Expr value = EpilogueOnBlockVector(c.at, c.n, c.cb, c.oh, ow, BufferLoad(acc[t], 0), c.lanes);
    body.push_back(lower::Store(c.out, ((image * s.oh + c.oh) * s.ow + ow) * c.lanes, value));
  }
  return lower::Seq(body);
}

// Pixels [begin, end) of the row, `columns` at a time, then one at a time.
Stmt Run(const RowContext& c, const std::string& tag, int64_t begin, int64_t end, int64_t columns,
         bool check_columns) {
  if (end <= begin) return nullptr;
  const int64_t tiles = (end - begin) / columns, rest = (end - begin) % columns;
  std::vector<Stmt> parts;
  if (tiles > 0) {
    Expr tile = te::MakeVar(tag + "t");
    parts.push_back(
        lower::KeepScalarFor(tile, tiles,
                             Pixels(c, tag + "t", tiles > 1 ? tile * columns + begin : Expr(begin),
                                    columns, check_columns)));
  }
  if (rest > 0) {
    Expr ow = te::MakeVar(tag + "r");
    parts.push_back(lower::KeepScalarFor(
        ow, rest,
        Pixels(c, tag + "r",
               rest > 1 ? ow + (begin + tiles * columns) : Expr(begin + tiles * columns), 1,
               check_columns)));
  }
  return SeqOf(parts);
}

// Vector registers beyond the taps' weights: accumulators need at least one, plus the input
// vector and a temporary.
constexpr int64_t kWorkingRegisters = 3;

bool TapsFit(const ConvShape& s, int64_t registers) {
  return s.kh * s.kw + kWorkingRegisters <= registers;
}

}  // namespace

bool DepthwiseNchwcTapsFit(const ConvShape& s, const Target& target) {
  return TapsFit(s, VectorRegisters(ClassifyTarget(target)));
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
  if (!TapsFit(s, registers)) return false;
  const int64_t taps = s.kh * s.kw;
  const int64_t columns = std::clamp<int64_t>(registers - taps - kWorkingRegisters, 1, 8);

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  if (!BuildConvEpilogueAt(group, m, &f, &xb, &wb, &at)) return false;
  const int lanes = static_cast<int>(block);
  if (!EpilogueVectorizes(at, lanes)) return false;

  // One task per (image, channel block, output row).
  const int64_t blocks = s.c / block;
  Expr t = te::MakeVar("t");
  Expr oh = te::FloorMod(t, Expr(s.oh));
  Expr cb = te::FloorMod(te::FloorDiv(t, Expr(s.oh)), Expr(blocks));
  Expr n = te::FloorDiv(t, Expr(s.oh * blocks));
  std::vector<Stmt> task;
  std::vector<Buffer> weights;
  for (int64_t k = 0; k < taps; ++k) {
    weights.push_back(NewVectorAccumulator("wvec" + std::to_string(k), block));
    f.locals.push_back(weights.back());
    task.push_back(
        lower::Store(weights.back(), 0, lower::VectorLoad(wb, (cb * taps + k) * block, lanes)));
  }
  RowContext ctx{s, lanes, xb, f.args.back().buffer, weights, at, n, cb, oh, &f};
  // Output columns whose taps all fall inside the image's columns.
  const int64_t lo = std::min(s.ow, (s.pad_l + s.s_w - 1) / s.s_w);
  const int64_t hi = std::clamp((s.w - s.kw + s.pad_l) / s.s_w + 1, lo, s.ow);
  task.push_back(SeqOf({Run(ctx, "l", 0, lo, 1, true), Run(ctx, "m", lo, hi, columns, false),
                        Run(ctx, "r", hi, s.ow, 1, true)}));

  const int64_t tasks = s.n * blocks * s.oh;
  const int64_t work = s.n * s.c * s.oh * s.ow * taps;
  bool par = opts.parallel && work >= opts.parallel_min_work && tasks > 1;
  f.body =
      lower::For(t, tasks, par ? lower::ForKind::kParallel : lower::ForKind::kSerial, SeqOf(task));
  f.prefer_vector_bits = p.prefer_vector_bits > 0 ? static_cast<int>(block * 32) : 0;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
