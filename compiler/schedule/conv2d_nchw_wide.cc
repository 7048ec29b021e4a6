// Register-blocked direct 2-D convolution on a "wide" output pitch.
//
// Stage 1 copies one image of the input into a workspace that is zero-padded and split by stride
// phase: plane (c, py, px) holds padded rows py, py+S, ... and columns px, px+S, ... With that, the
// input of output (oh, ow) for tap (kh, kw) sits at plane (c, kh%S, kw%S), row oh + kh/S, column
// ow + kw/S, so along the flat index q = oh*PW + ow every tap reads consecutive floats. Stage 2
// accumulates `lanes` consecutive q times `oc_block` output channels in scalar locals (promoted to
// SSA and packed into vectors by LLVM's SLP vectoriser), and writes the block to a wide workspace
// [N, OC, QP]. The epilogue (bias and the group's elementwise/broadcast nodes) is lowered by the
// default schedule from a te compute that reads the valid columns of the wide workspace.
#include <ember/compiler/ir/weight_layout.h>

#include "conv_group.h"
#include "loop_builders.h"
#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {

using lower::Buffer;
using lower::BufferLoad;
using lower::BufferScope;
using lower::ForKind;
using lower::Stmt;
using te::Expr;

bool TryConv2dWide(const FusedGroup& group, const lower::ScheduleOptions& opts,
                   const Conv2dParams& table_params, lower::LoweredFunc* out) {
  ConvGroup m;
  if (!MatchConvGroup(group, &m) || !IsNchw(m.s) || !Undilated(m.s) ||
      m.conv->HasAttr(kPackedWeightBlockAttr)) {
    return false;
  }
  const Conv2dParams p = TunedConv2dWideParams(group, opts, table_params);
  const ConvShape& s = m.s;
  const Node* conv = m.conv;
  const int64_t lanes = p.lanes;
  int64_t ocb = 1;
  for (int64_t cand : {p.oc_block, int64_t{4}, int64_t{2}, int64_t{1}}) {
    if (cand >= 1 && cand <= p.oc_block && s.ocg % cand == 0) {
      ocb = cand;
      break;
    }
  }
  // Phase planes: PH rows x PW columns each; the wide output pitch is PW.
  const int64_t ph = s.oh + (s.kh - 1) / s.s_h;
  const int64_t pw = s.ow + (s.kw - 1) / s.s_w;
  const int64_t phases = s.s_h * s.s_w;
  const int64_t plane = ph * pw;
  const int64_t q_valid = s.oh * pw;
  const int64_t q_tiles = (q_valid + lanes - 1) / lanes;
  const int64_t qp = q_tiles * lanes;
  const int64_t pad_elems = s.c * phases * plane;
  const int64_t slack = lanes + s.kw + pw;
  // Too much garbage work (tiny outputs with wide pitch) or huge workspaces: default schedule.
  if (qp > 4 * s.oh * s.ow + lanes || pad_elems > (int64_t{1} << 28)) return false;

  // ---- the epilogue reads the valid columns of the wide result ----
  lower::LoweredFunc f;
  Buffer wide_buf, xb, wb;
  const int64_t pitch = pw;
  auto wide_index = [&](const std::vector<Expr>& i) {
    return (i[0] * s.oc + i[1]) * qp + i[2] * pitch + i[3];
  };
  if (!LowerConvEpilogue(group, m, s.n * s.oc * qp, wide_index, opts, &f, &wide_buf, &xb, &wb)) {
    return false;
  }
  Buffer padded =
      NewFloatBuffer(conv->name + "_padded_ws", pad_elems + slack, BufferScope::kWorkspace);

  // ---- stage 1: zero-padded, phase-split copy of image n ----
  Expr n = te::MakeVar("n");
  Expr c = te::MakeVar("c"), py = te::MakeVar("py"), px = te::MakeVar("px");
  Expr y = te::MakeVar("y"), x = te::MakeVar("x");
  Expr src_y = y * s.s_h + py - s.pad_t;
  Expr src_x = x * s.s_w + px - s.pad_l;
  Expr inside = (src_y >= 0) && (src_y < s.h) && (src_x >= 0) && (src_x < s.w);
  Expr src = ((n * s.c + c) * s.h + src_y) * s.w + src_x;
  Expr dst = (((c * s.s_h + py) * s.s_w + px) * ph + y) * pw + x;
  Stmt copy = lower::Store(padded, dst,
                           te::Select(inside, BufferLoad(xb, src), te::Const(te::Float(32), 0)));
  copy = lower::For(x, pw, ForKind::kVectorized, copy);
  copy = lower::For(y, ph, ForKind::kSerial, copy);
  copy = lower::For(px, s.s_w, ForKind::kSerial, copy);
  copy = lower::For(py, s.s_h, ForKind::kSerial, copy);
  bool par_copy = opts.parallel && pad_elems >= opts.parallel_min_work && s.c > 1;
  copy = lower::For(c, s.c, par_copy ? ForKind::kParallel : ForKind::kSerial, copy);
  Expr z = te::MakeVar("z");
  Stmt zero_slack = lower::For(z, slack, ForKind::kVectorized,
                               lower::Store(padded, pad_elems + z, te::Const(te::Float(32), 0)));

  // ---- stage 2: register-blocked accumulation over (ic, kh, kw) ----
  // Reduction loops over (ic, kh, kw): LLVM must not vectorise or unroll them (it would turn the
  // accumulators into reductions along them); the SLP vectoriser packs the lanes instead.
  Expr t = te::MakeVar("t"), ic_v = te::MakeVar("ic"), kh_v = te::MakeVar("kh"),
       kw_v = te::MakeVar("kw");
  const int64_t taps = s.kh * s.kw;
  const int64_t red_extent = s.icg * taps;
  Expr ic = s.icg > 1 ? ic_v : Expr(0);
  Expr kh_e = s.kh > 1 ? kh_v : Expr(0);
  Expr kw_e = s.kw > 1 ? kw_v : Expr(0);
  Expr r = (ic * s.kh + kh_e) * s.kw + kw_e;
  const int64_t oc_blocks = s.oc / ocb;
  Expr ob = te::FloorDiv(t, Expr(q_tiles));
  Expr qt = te::FloorMod(t, Expr(q_tiles));
  Expr oc0 = ob * ocb;
  Expr grp = s.group > 1 ? te::FloorDiv(oc0, Expr(s.ocg)) : Expr(0);
  Expr ic_e = s.group > 1 ? grp * s.icg + ic : ic;
  Expr phase_y = s.s_h > 1 ? te::FloorMod(kh_e, Expr(s.s_h)) : Expr(0);
  Expr phase_x = s.s_w > 1 ? te::FloorMod(kw_e, Expr(s.s_w)) : Expr(0);
  Expr row_off = s.s_h > 1 ? te::FloorDiv(kh_e, Expr(s.s_h)) : kh_e;
  Expr col_off = s.s_w > 1 ? te::FloorDiv(kw_e, Expr(s.s_w)) : kw_e;
  Expr base =
      ((ic_e * s.s_h + phase_y) * s.s_w + phase_x) * plane + row_off * pw + col_off + qt * lanes;
  std::vector<std::vector<Buffer>> acc(ocb, std::vector<Buffer>(lanes));
  std::vector<Stmt> init, update, store;
  for (int64_t j = 0; j < ocb; ++j) {
    Expr widx = (oc0 + j) * red_extent + r;
    Expr wval = BufferLoad(wb, widx);
    for (int64_t v = 0; v < lanes; ++v) {
      Buffer a = NewFloatBuffer("acc" + std::to_string(j) + "_" + std::to_string(v), 1,
                                BufferScope::kLocal);
      f.locals.push_back(a);
      acc[j][v] = a;
      init.push_back(lower::Store(a, 0, te::Const(te::Float(32), 0)));
      update.push_back(lower::Store(a, 0, BufferLoad(a, 0) + BufferLoad(padded, base + v) * wval));
      store.push_back(
          lower::Store(wide_buf, (n * s.oc + oc0 + j) * qp + qt * lanes + v, BufferLoad(a, 0)));
    }
  }
  Stmt red = lower::Seq(update);
  red = lower::KeepScalarFor(kw_v, s.kw, red);  // the SLP vectoriser packs the tile
  red = lower::KeepScalarFor(kh_v, s.kh, red);
  red = lower::KeepScalarFor(ic_v, s.icg, red);
  std::vector<Stmt> tile = init;
  tile.push_back(red);
  tile.insert(tile.end(), store.begin(), store.end());
  int64_t work = oc_blocks * q_tiles * ocb * lanes * red_extent;
  bool par = opts.parallel && work >= opts.parallel_min_work && oc_blocks * q_tiles > 1;
  Stmt compute = lower::For(t, oc_blocks * q_tiles, par ? ForKind::kParallel : ForKind::kSerial,
                            lower::Seq(tile));

  // A unit loop over n binds n = 0 for single images (LLVM folds it away).
  Stmt conv_stmt = lower::For(n, s.n, ForKind::kSerial, lower::Seq({copy, compute}));
  f.workspaces.push_back(padded);
  f.body = lower::Seq({zero_slack, conv_stmt, f.body});
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
