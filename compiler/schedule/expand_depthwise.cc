// A 1x1 conv and the depthwise conv reading its result in one kernel, in NCHW[x]c: MobileNet's
// inverted residual block (expansion, activation, depthwise, activation).
//
// Apart, the expansion writes its whole result, the block's widest tensor (MobileNetV2's first
// is 96 x 112 x 112 floats, 4.8 MB), and the depthwise kernel reads it back, both beyond L2: the
// depthwise conv then ran 2.3x slower per pixel than on an input in L2. Here one task takes one
// weight block of the expansion's output channels and a band of output rows. It computes the
// expanded rows into a ring of KH rows (zero-padded as the depthwise conv pads) just ahead of the
// output row that first needs them, then runs that output row from the ring, so each expanded
// value is written and read while the ring is in L1 or L2. The first KH - stride rows of a band
// are computed by the band above too; bands are few (enough tasks for the threads) and tall.
#include <ember/compiler/ir/weight_layout.h>

#include <algorithm>
#include <unordered_map>

#include "../lower/expr_mutator.h"
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

// kMinTasks is met by cutting the rows into bands; a band keeps at least kMinBandRows output
// rows, so the rows computed twice at its top stay a small share. Seven, not eight: a 14-row
// plane of few weight blocks then takes two bands and fuses (MobileNetV2's stride-2 block to
// 14x14, 6 blocks: 67 us fused against 74 apart at one thread, 38 against 48 at two).
constexpr int64_t kMinBandRows = 7;

// Loads of one sub-group's argument buffers rewritten to the fused function's.
class RebindArgs : public lower::ExprMutator {
 public:
  std::unordered_map<const lower::BufferNode*, Buffer> to;

 protected:
  Expr VisitBufferLoad(const lower::BufferLoadNode* l, Expr index) override {
    auto it = to.find(l->buffer.get());
    return Expr(std::make_shared<lower::BufferLoadNode>(
        l->dtype, it != to.end() ? it->second : l->buffer, std::move(index)));
  }
};

// One conv of the group with its epilogue, as the conv schedules see a group of their own.
struct Half {
  FusedGroup group;
  ConvGroup m;
  lower::LoweredFunc f;  // its own argument buffers (see RebindArgs)
  Buffer x, w;
  EpilogueAt at;
  BiasAt bias;
};

// The group's nodes [begin, end) as a group reading `inputs` and writing `output`.
FusedGroup SubGroup(const FusedGroup& group, size_t begin, size_t end, std::vector<int> inputs,
                    int output) {
  FusedGroup sub;
  sub.graph = group.graph;
  sub.func_name = group.func_name;
  sub.nodes.assign(group.nodes.begin() + static_cast<std::ptrdiff_t>(begin),
                   group.nodes.begin() + static_cast<std::ptrdiff_t>(end));
  sub.inputs = std::move(inputs);
  sub.outputs = {output};
  sub.anchor = 0;
  return sub;
}

// Builds the half's epilogue (with the bias apart when `bias_apart`) and rebinds it, its data
// and weights to `f`'s arguments: the half's inputs start with the group's, in order.
bool BuildHalf(const lower::LoweredFunc& f, size_t group_inputs, bool bias_apart, Half* h) {
  if (!MatchConvGroup(h->group, &h->m)) return false;
  if (!BuildConvEpilogueAt(h->group, h->m, &h->f, &h->x, &h->w, &h->at,
                           bias_apart ? &h->bias : nullptr)) {
    return false;
  }
  auto rebind = std::make_shared<RebindArgs>();
  for (size_t i = 0; i < group_inputs; ++i)
    rebind->to[h->f.args[i].buffer.get()] = f.args[i].buffer;
  auto mapped = [&](const Buffer& b) {
    auto it = rebind->to.find(b.get());
    return it != rebind->to.end() ? it->second : Buffer();
  };
  h->x = mapped(h->x);
  h->w = mapped(h->w);
  EpilogueAt at = h->at;
  h->at = [at, rebind](const std::vector<Expr>& i, const Expr& acc) {
    return rebind->Visit(at(i, acc));
  };
  if (h->bias) {
    BiasAt bias = h->bias;
    h->bias = [bias, rebind](const std::vector<Expr>& i) {
      Expr b = bias(i);
      return b.defined() ? rebind->Visit(b) : b;
    };
  }
  return true;
}

// What every loop of the kernel reads: the two convs' geometry and the task.
struct Pass {
  const ConvShape& ex;  // the 1x1 conv
  const ConvShape& dw;  // the depthwise conv
  int lanes;            // the layout's block, one vector
  int64_t vectors;      // blocks per task (the expansion's weight block / lanes)
  int64_t ring_w;       // columns of a ring row: the depthwise conv's padded input row
  const Half& a;
  const Half& b;
  Buffer ring, out;
  Expr n, group, task;  // image, weight block of the expansion, task
  lower::LoweredFunc* f;
};

// The bias vector of block cb of a half's conv (zeros without one): its accumulators start
// from it, so the epilogue has no add left.
Expr BlockBias(const Pass& c, const Half& h, const Expr& cb) {
  const Expr bias = BiasOnBlockVector(h.bias, c.n, cb, c.lanes);
  return bias.defined() ? bias : te::Const(te::WithLanes(te::Float(32), c.lanes), 0);
}

// Element offset of column j of block v of ring row `slot` of the task's ring.
Expr RingIndex(const Pass& c, const Expr& slot, const Expr& v, const Expr& j) {
  return (((c.task * c.dw.kh + slot) * c.vectors + v) * c.ring_w + j) * c.lanes;
}

// The ring row holding expanded input row ih (ih >= -pad_t).
Expr RingSlot(const Pass& c, const Expr& ih) { return te::FloorMod(ih + c.dw.pad_t, c.dw.kh); }

Stmt ZeroColumns(const Pass& c, const Expr& slot, int64_t begin, int64_t end) {
  std::vector<Stmt> v;
  const Expr zero = te::Const(te::WithLanes(te::Float(32), c.lanes), 0);
  for (int64_t k = 0; k < c.vectors; ++k) {
    v.push_back(Range("zc", begin, end, lower::ForKind::kSerial, [&](const Expr& j) {
      return lower::Store(c.ring, RingIndex(c, slot, k, j), zero);
    }));
  }
  return SeqOf(v);
}

// `count` expanded pixels of row ih from column iw0, every block of the task: the 1x1 conv's
// register tile (pixels x blocks, a broadcast input channel times a weight vector per step) with
// the expansion's epilogue, stored into the ring.
Stmt ExpandTile(const Pass& c, const std::string& tag, const Expr& ih, const Expr& slot,
                const Expr& iw0, int64_t count) {
  const ConvShape& s = c.ex;
  // The input's block may be narrower than the output's (24 channels in 8s, expanded to 144 in
  // 16s), or 1 channel: NCHW (a graph input the layout pass left as it is).
  const int64_t in_block = std::max<int64_t>(1, s.in_block), icbs = s.c / in_block;
  const int64_t block = c.lanes;
  const int64_t weight_block = c.vectors * block;
  Expr icb = te::MakeVar("icb"), lane = te::MakeVar("icl");
  Expr ic = icb * in_block + lane;
  BroadcastTile tile(
      "acce" + tag, count, c.vectors, c.lanes, 1,
      [&](int64_t r) {
        return BufferLoad(c.a.x,
                          (((c.n * icbs + icb) * s.h + ih) * s.w + iw0 + r) * in_block + lane);
      },
      [&](int64_t v, int) {
        return lower::VectorLoad(c.a.w, (c.group * s.c + ic) * weight_block + v * block, c.lanes);
      },
      [&](int64_t r, int64_t v, const Expr& acc) {
        const Expr cb = c.group * c.vectors + v, iw = iw0 + r;
        return lower::Store(c.ring, RingIndex(c, slot, v, iw + c.dw.pad_l),
                            EpilogueOnBlockVector(c.a.at, c.n, cb, ih, iw, acc, c.lanes));
      },
      c.f);
  tile.StartFrom([&](int64_t v) { return BlockBias(c, c.a, c.group * c.vectors + v); });
  // Each step also fetches the same step's weights of the next weight block, the task a thread
  // runs next: in-model a task's first row otherwise waits for its weights from L3, a cost small
  // planes reuse them too little to hide (MobileNetV2's 7x7 blocks took 1.5x their time alone).
  PrefetchFloats(c.a.w, ((c.group + 1) * s.c + ic) * weight_block, weight_block, &tile.update);
  Stmt red = lower::Seq(tile.update);
  red =
      in_block > 1 ? lower::KeepScalarFor(lane, in_block, red) : lower::SubstituteVar(red, lane, 0);
  return tile.With(lower::KeepScalarFor(icb, icbs, red));
}

// Expanded input row ih into its ring row: zeros where the depthwise conv pads (rows above or
// below the image, columns left and right of it), else the 1x1 conv's tiles.
Stmt ExpandRow(const Pass& c, int64_t most_pixels, const Expr& ih) {
  const Expr slot = RingSlot(c, ih);
  const int64_t pad_l = c.dw.pad_l;
  const int64_t cols = std::min(c.ex.w, c.ring_w - pad_l);
  // Equal tiles where a width near the most divides the row (a narrow tail tile has too few
  // accumulators for the FMAs in flight).
  const int64_t pixels = ChooseOwBlock(cols, most_pixels);
  const int64_t full = cols / pixels, tail = cols % pixels;
  std::vector<Stmt> row{ZeroColumns(c, slot, 0, pad_l)};
  row.push_back(Range("et", 0, full, lower::ForKind::kSerial, [&](const Expr& t) {
    return ExpandTile(c, "m", ih, slot, t * pixels, pixels);
  }));
  if (tail > 0) row.push_back(ExpandTile(c, "t", ih, slot, Expr(full * pixels), tail));
  row.push_back(ZeroColumns(c, slot, pad_l + cols, c.ring_w));
  return lower::If((ih >= 0) && (ih < c.ex.h), SeqOf(row), ZeroColumns(c, slot, 0, c.ring_w));
}

// `count` output pixels of row oh from column ow0, block v of the task: the depthwise taps read
// the ring, the accumulators start from the bias and end with the group's epilogue.
Stmt DepthwiseTile(const Pass& c, const std::string& tag, const Expr& oh, const Expr& v,
                   const std::vector<Expr>& taps, const Expr& ow0, int64_t count) {
  const ConvShape& s = c.dw;
  const Expr cb = c.group * c.vectors + v;
  const Expr start = BlockBias(c, c.b, cb);
  std::vector<Buffer> acc;
  std::vector<Stmt> body;
  for (int64_t k = 0; k < count; ++k) {
    acc.push_back(NewVectorAccumulator("accd" + tag + std::to_string(k), c.lanes));
    c.f->locals.push_back(acc.back());
    body.push_back(lower::Store(acc.back(), 0, start));
  }
  for (int64_t kh = 0; kh < s.kh; ++kh) {
    const Expr slot = RingSlot(c, oh * s.s_h - s.pad_t + kh);
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      const Expr& w = taps[static_cast<size_t>(kh * s.kw + kw)];
      for (int64_t k = 0; k < count; ++k) {
        const Expr in =
            lower::VectorLoad(c.ring, RingIndex(c, slot, v, (ow0 + k) * s.s_w + kw), c.lanes);
        body.push_back(lower::Store(acc[k], 0, BufferLoad(acc[k], 0) + in * w));
      }
    }
  }
  const int64_t blocks = s.oc / c.lanes;
  for (int64_t k = 0; k < count; ++k) {
    const Expr ow = ow0 + k;
    body.push_back(lower::Store(
        c.out, (((c.n * blocks + cb) * s.oh + oh) * s.ow + ow) * c.lanes,
        EpilogueOnBlockVector(c.b.at, c.n, cb, oh, ow, BufferLoad(acc[k], 0), c.lanes)));
  }
  return lower::Seq(body);
}

Stmt DepthwiseRow(const Pass& c, int64_t most_pixels, const Expr& oh) {
  const int64_t pixels = std::min(most_pixels, c.dw.ow);
  const int64_t full = c.dw.ow / pixels, tail = c.dw.ow % pixels;
  const ConvShape& s = c.dw;
  // A loop over the task's blocks (one copy of the tiles, not one per block); each block's tap
  // weights are loaded once per row into locals the tiles keep in registers.
  return Range("dv", 0, c.vectors, lower::ForKind::kSerial, [&](const Expr& v) {
    const Expr cb = c.group * c.vectors + v;
    std::vector<Stmt> row;
    std::vector<Expr> taps;
    for (int64_t k = 0; k < s.kh * s.kw; ++k) {
      Buffer w = NewVectorAccumulator("wtap" + std::to_string(k), c.lanes);
      c.f->locals.push_back(w);
      row.push_back(
          lower::Store(w, 0, lower::VectorLoad(c.b.w, (cb * s.kh * s.kw + k) * c.lanes, c.lanes)));
      taps.push_back(BufferLoad(w, 0));
    }
    row.push_back(Range("dt", 0, full, lower::ForKind::kSerial, [&](const Expr& t) {
      return DepthwiseTile(c, "m", oh, v, taps, t * pixels, pixels);
    }));
    if (tail > 0) row.push_back(DepthwiseTile(c, "t", oh, v, taps, Expr(full * pixels), tail));
    return SeqOf(row);
  });
}

// Bands of output rows per (image, weight block of the expansion): enough for kMinTasks tasks
// where the rows allow, and an even task count where one more band gives it (9 tasks split
// 4 + 5 on two threads).
int64_t Bands(const ConvShape& dw, int64_t groups) {
  const int64_t most = std::max<int64_t>(1, dw.oh / kMinBandRows);
  int64_t bands = std::clamp<int64_t>((kMinTasks + groups - 1) / groups, 1, most);
  if (bands * groups % 2 == 1 && bands < most) ++bands;
  return bands;
}

}  // namespace

bool ExpandDepthwiseFits(const ConvShape& ex, int64_t expand_block, const ConvShape& dw,
                         const ExpandDepthwiseParams& p, int64_t registers) {
  const int64_t lanes = p.lanes;
  const bool pointwise = ex.kh == 1 && ex.kw == 1 && ex.s_h == 1 && ex.s_w == 1 && ex.pad_t == 0 &&
                         ex.pad_l == 0 && ex.oh == ex.h && ex.ow == ex.w && ex.group == 1;
  const bool depthwise = dw.group == dw.c && dw.oc == dw.c && dw.icg == 1 && Undilated(dw) &&
                         dw.kh >= dw.s_h && dw.kw >= dw.s_w && dw.pad_t < dw.kh &&
                         dw.pad_l < dw.kw && DepthwiseTapsHeld(dw, registers, p.dw_pixels);
  const bool input_blocked = ex.in_block >= kMinLayoutBlock && ex.c % ex.in_block == 0;
  return pointwise && depthwise && lanes >= kMinLayoutBlock &&
         (ex.in_block == 0 || input_blocked) && ex.out_block == lanes && dw.in_block == lanes &&
         dw.out_block == lanes && expand_block > 0 && expand_block % lanes == 0 &&
         ex.oc % expand_block == 0 && ex.oc == dw.c && ex.n == dw.n && ex.oh == dw.h &&
         ex.ow == dw.w &&
         // Too few tasks for the threads (a short plane of few channel blocks: PP-OCR's
         // recognizer ran 1.13x its time at two threads fused): apart, the two kernels split
         // their pixels finer.
         dw.n * Bands(dw, ex.oc / expand_block) * (ex.oc / expand_block) >= kMinTasks;
}

bool TryExpandDepthwise(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        const ExpandDepthwiseParams& p, lower::LoweredFunc* out) {
  // The group: the 1x1 conv first, its epilogue, the depthwise conv, its epilogue.
  size_t second = 0;
  for (size_t i = 1; i < group.nodes.size() && second == 0; ++i) {
    if (group.nodes[i]->op == "Conv") second = i;
  }
  if (group.nodes.empty() || group.nodes[0]->op != "Conv" || second == 0 ||
      group.outputs.size() != 1 || !group.nodes[second]->HasInput(0)) {
    return false;
  }
  const int mid = group.nodes[second]->inputs[0];
  std::vector<int> b_inputs = group.inputs;
  b_inputs.push_back(mid);
  lower::LoweredFunc f = GroupFunction(group);
  Half a, b;
  a.group = SubGroup(group, 0, second, group.inputs, mid);
  b.group = SubGroup(group, second, group.nodes.size(), b_inputs, group.outputs[0]);
  if (!BuildHalf(f, group.inputs.size(), true, &a) ||
      !BuildHalf(f, group.inputs.size(), true, &b)) {
    return false;
  }
  const ConvShape &ex = a.m.s, &dw = b.m.s;
  const int64_t expand_block = a.m.conv->GetInt(kPackedWeightBlockAttr, 0);
  const int lanes = static_cast<int>(p.lanes);
  if (!ExpandDepthwiseFits(ex, expand_block, dw, p, TargetVectorRegisters(opts)) || !a.x || !a.w ||
      !b.w || b.m.conv->GetInt(kPackedWeightBlockAttr, 0) != p.lanes ||
      group.graph->value(mid).type.dtype != kFloat32 || !EpilogueVectorizes(a.at, lanes) ||
      !EpilogueVectorizes(b.at, lanes)) {
    return false;
  }

  const int64_t vectors = expand_block / p.lanes, groups = ex.oc / expand_block;
  // An even task count where the rows allow one more band: 9 tasks split 4 + 5 on two threads.
  const int64_t bands = Bands(dw, groups);
  const int64_t band_rows = (dw.oh + bands - 1) / bands;
  const int64_t tasks = dw.n * bands * groups;
  const int64_t ring_w = (dw.ow - 1) * dw.s_w + dw.kw;
  Buffer ring =
      NewFloatBuffer(group.func_name + "_ring_ws", tasks * dw.kh * vectors * ring_w * p.lanes,
                     lower::BufferScope::kWorkspace);
  f.workspaces.push_back(ring);

  // Tasks band-major: a thread's share is a band of rows of every channel, as in the convs
  // before and after the block.
  Expr t = te::MakeVar("t");
  Pass c{ex,
         dw,
         lanes,
         vectors,
         ring_w,
         a,
         b,
         ring,
         f.args.back().buffer,
         te::FloorDiv(t, Expr(bands * groups)),
         te::FloorMod(t, Expr(groups)),
         t,
         &f};
  const Expr oh0 = te::FloorMod(te::FloorDiv(t, Expr(groups)), Expr(bands)) * band_rows;
  // The depthwise tiles' accumulators fill the registers the taps leave (as the plain depthwise
  // kernel's: a 5x5 conv's 25 tap vectors leave 4 of AVX-512's 32).
  const int registers = TargetVectorRegisters(opts);
  const int64_t expand_pixels = std::max<int64_t>(1, p.expand_accumulators / vectors);
  const int64_t dw_pixels =
      std::clamp<int64_t>(registers - dw.kh * dw.kw - 3, 1, std::max<int64_t>(1, p.dw_pixels));
  // One loop over the band's input rows, each expanded once into the ring: the first output
  // row needs kh of them, each later one `stride` more, so output row j is ready after input
  // row ahead + (j + 1) * stride - 1. (The expansion's tiles are the kernel's bulk: one copy of
  // them, not one for the band's first rows and another for the rest.)
  const int64_t ahead = dw.kh - dw.s_h;
  Stmt task =
      Range("r", 0, ahead + band_rows * dw.s_h, lower::ForKind::kSerial, [&](const Expr& q) {
        const Expr done = q + (1 - ahead);  // input rows past `ahead` expanded so far
        const Expr oh = oh0 + te::FloorDiv(done, Expr(dw.s_h)) - 1;
        Expr ready = done >= dw.s_h;
        if (dw.s_h > 1) ready = ready && te::FloorMod(done, Expr(dw.s_h)) == Expr(0);
        if (bands * band_rows > dw.oh) ready = ready && oh < dw.oh;
        return lower::Seq({ExpandRow(c, expand_pixels, oh0 * dw.s_h - dw.pad_t + q),
                           lower::If(ready, DepthwiseRow(c, dw_pixels, oh))});
      });
  const int64_t work = ex.n * ex.oc * ex.h * ex.w * ex.c;
  const bool par = opts.parallel && tasks > 1 && work >= opts.parallel_min_work;
  f.body = lower::For(t, tasks, par ? lower::ForKind::kParallel : lower::ForKind::kSerial, task);
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
