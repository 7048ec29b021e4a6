// 3 x 3 stride-1 convolution in NCHW[x]c as Winograd F(m x m, 3 x 3)
// (ember/compiler/ir/winograd.h).
//
// Four steps per image, each a parallel loop (steps 2-4 band by band, a band being the tile rows
// whose V and M fit half of L3, or L2 where there is none):
//  1. the input is copied zero-padded to whole tiles (PadConvInput);
//  2. input transform: every tile's alpha x alpha pixels of one channel block (one vector each,
//     channels in the lanes) become V = B^T d B, stored as V[alpha^2][C/x][tiles][x];
//  3. alpha^2 independent products M[xi] = V[xi] U[xi] over the input channels, in register tiles
//     of `rows` tiles x the output channels of one weight block, as the channels-in-lanes direct
//     kernel does per pixel: a broadcast of V against vectors of U (weights transformed at compile
//     time by WinogradConvWeights, [alpha^2][OC/B][C][B]); stored M[alpha^2][OC/y][tiles][y]
//     (with lane steps, a tile's x channels of V in one load, a lane each);
//  4. output transform Y = A^T M A per tile and channel vector, the group's epilogue applied in
//     registers, stored straight into the NCHW[y]c output.
// The reduction runs on alpha^2 products per tile instead of 9 m^2 (F(4x4): 36 for 144); the
// transforms are additions and multiplications by small constants on whole vectors.
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/winograd.h>
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

// Output tiles at least this share of the output (less: the padded tiles' waste outweighs).
constexpr double kMinTileUse = 0.85;
// A tile's products take C x OC multiply-adds per output pixel group and its transforms work
// on C + OC channels: below this ratio (32 channels in and out) the transforms do not pay.
constexpr int64_t kMinProductsPerTransformedChannel = 16;

// sum_k coeff[k] * terms[k]: zero coefficients skipped, +-1 without a multiplication.
Expr Combine(const double* coeff, const std::vector<Expr>& terms) {
  Expr sum;
  for (size_t k = 0; k < terms.size(); ++k) {
    const double c = coeff[k];
    if (c == 0) continue;
    Expr term = terms[k];
    if (c == -1 && !sum.defined()) {
      term = F32(-1) * term;
    } else if (c != 1 && c != -1) {
      term = F32(c) * term;
    }
    sum = !sum.defined() ? term : (c == -1 ? sum - term : sum + term);
  }
  return sum.defined() ? sum : F32(0);
}

// `count` vector locals named name0, name1, ... (mem2reg keeps them in registers).
std::vector<Buffer> VectorLocals(lower::LoweredFunc* f, const std::string& name, int64_t count,
                                 int64_t lanes) {
  std::vector<Buffer> out;
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(NewVectorAccumulator(name + std::to_string(i), lanes));
    f->locals.push_back(out.back());
  }
  return out;
}

std::vector<Expr> Loads(const std::vector<Buffer>& locals) {
  std::vector<Expr> out;
  for (const Buffer& b : locals) out.push_back(BufferLoad(b, 0));
  return out;
}

// The two-sided transform out = L X L^T of an n x n matrix of vector expressions `x` (row-major),
// L being r x n (row-major): tmp = L X into locals, then each out element (row-major, r x r) is
// handed to `emit` as an expression of the locals.
Stmt TwoSided(const std::vector<double>& l, int64_t r, int64_t n, const std::vector<Expr>& x,
              const std::vector<Buffer>& tmp,
              const std::function<Stmt(int64_t, const Expr&)>& emit) {
  std::vector<Stmt> body;
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      std::vector<Expr> column;
      for (int64_t k = 0; k < n; ++k) column.push_back(x[k * n + j]);
      body.push_back(lower::Store(tmp[i * n + j], 0, Combine(&l[i * n], column)));
    }
  }
  std::vector<Expr> t = Loads(tmp);
  for (int64_t i = 0; i < r; ++i) {
    std::vector<Expr> row(t.begin() + i * n, t.begin() + (i + 1) * n);
    for (int64_t j = 0; j < r; ++j) body.push_back(emit(i * r + j, Combine(&l[j * n], row)));
  }
  return lower::Seq(body);
}

struct Plan {
  const WinogradTransform* t;
  int64_t th, tw;      // tiles per column, per row
  int64_t band;        // tile rows per band (the steps run band by band; divides th)
  int64_t tiles;       // tiles per band: band * tw
  int64_t ph, pw;      // padded plane
  int64_t xin, lanes;  // channel blocks of the input and the output (vector widths)
  int64_t ocb;         // output channels per weight block
  int64_t rows;        // tiles per register tile of the products
  int64_t steps;       // input channels per broadcast load (Conv2dOcVecParams::lane_steps), or 1
};

// Step 2 for one channel block and tile row of the band from tile row band0: V[xi][cb][t][:] =
// (B^T d B)[xi], t counting the band's tiles.
Stmt InputTransform(const ConvShape& s, const Plan& p, const Buffer& padded, const Buffer& v,
                    const Expr& band0, lower::LoweredFunc* f) {
  const int64_t a = p.t->alpha, cbs = s.c / p.xin;
  Expr task = te::MakeVar("it"), tx = te::MakeVar("tx");
  Expr cb = te::FloorDiv(task, Expr(p.band)), row = te::FloorMod(task, Expr(p.band));
  Expr ty = band0 + row;
  std::vector<Expr> d;
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < a; ++j) {
      Expr pixel = (cb * p.ph + ty * p.t->m + i) * p.pw + tx * p.t->m + j;
      d.push_back(lower::VectorLoad(padded, pixel * p.xin, static_cast<int>(p.xin)));
    }
  }
  std::vector<Buffer> tmp = VectorLocals(f, "win", a * a, p.xin);
  Expr tile = row * p.tw + tx;
  Stmt body = TwoSided(p.t->bt, a, a, d, tmp, [&](int64_t xi, const Expr& value) {
    return lower::Store(v, ((xi * cbs + cb) * p.tiles + tile) * p.xin, value);
  });
  body = lower::For(tx, p.tw, ForKind::kSerial, body);
  const int64_t tasks = cbs * p.band;
  return lower::For(task, tasks, tasks > 1 ? ForKind::kParallel : ForKind::kSerial, body);
}

// One register tile of step 3: tiles t0 .. t0 + rows of product xi, output channels of block ob.
// With p.steps == p.xin a tile row's channels of a block come in one vector load, a lane each.
Stmt ProductTile(const ConvShape& s, const Plan& p, const Buffer& v, const Buffer& u,
                 const Buffer& m, const Expr& xi, const Expr& ob, const Expr& t0, int64_t rows,
                 const std::string& tag, lower::LoweredFunc* f) {
  const int64_t cbs = s.c / p.xin, vectors = p.ocb / p.lanes;
  // KeepScalarFor drops a loop of one iteration: its variable is then 0.
  Expr cb_var = te::MakeVar("cb"), ci_var = te::MakeVar("ci");
  Expr cb = cbs > 1 ? cb_var : Expr(0);
  const bool lane_steps = p.steps > 1;
  auto w_base = [&](const Expr& ci) {
    return ((xi * (s.oc / p.ocb) + ob) * s.c + cb * p.xin + ci) * p.ocb;
  };
  Expr ci = lane_steps ? Expr(0) : ci_var;
  BroadcastTile tile(
      "acc" + tag, rows, vectors, static_cast<int>(p.lanes), static_cast<int>(p.steps),
      [&](int64_t r) {
        return lower::VectorLoad(v, ((xi * cbs + cb) * p.tiles + t0 + r) * p.xin + ci,
                                 static_cast<int>(p.steps));
      },
      [&](int64_t k, int step) {
        return lower::VectorLoad(u, w_base(ci + step) + k * p.lanes, static_cast<int>(p.lanes));
      },
      [&](int64_t r, int64_t k, const Expr& acc) {
        Expr ocv = ob * vectors + k;  // output channel vector
        return lower::Store(m, ((xi * (s.oc / p.lanes) + ocv) * p.tiles + t0 + r) * p.lanes, acc);
      },
      f);
  // The task's later register tiles find its weights in cache; the first would wait for them
  // from memory: every step fetches the next task's (the next block of U in task order).
  PrefetchFloats(u, w_base(ci) + s.c * p.ocb, p.ocb * p.steps, &tile.update);
  Stmt red = lower::Seq(tile.update);
  if (!lane_steps) red = lower::KeepScalarFor(ci_var, p.xin, red);
  return tile.With(lower::KeepScalarFor(cb_var, cbs, red));
}

// Step 3: one task per (xi, weight block), its tiles in register tiles of p.rows.
Stmt Products(const ConvShape& s, const Plan& p, const Buffer& v, const Buffer& u, const Buffer& m,
              lower::LoweredFunc* f) {
  const int64_t a2 = p.t->alpha * p.t->alpha, obs = s.oc / p.ocb;
  Expr task = te::MakeVar("pt");
  Expr xi = te::FloorDiv(task, Expr(obs)), ob = te::FloorMod(task, Expr(obs));
  const int64_t full = p.tiles / p.rows, rest = p.tiles % p.rows;
  std::vector<Stmt> body;
  Expr rt = te::MakeVar("rt");
  Stmt main = ProductTile(s, p, v, u, m, xi, ob, full > 1 ? rt * p.rows : Expr(0), p.rows, "m", f);
  body.push_back(full > 1 ? lower::For(rt, full, ForKind::kSerial, main) : main);
  if (rest > 0)
    body.push_back(ProductTile(s, p, v, u, m, xi, ob, Expr(full * p.rows), rest, "r", f));
  return lower::For(task, a2 * obs, ForKind::kParallel, SeqOf(body));
}

// Step 4 for one output channel vector and tile row of the band from tile row band0, the
// epilogue applied before each store.
Stmt OutputTransform(const ConvShape& s, const Plan& p, const Buffer& m, const Buffer& out,
                     const EpilogueAt& at, const Expr& n, const Expr& band0,
                     lower::LoweredFunc* f) {
  const int64_t a = p.t->alpha, mt = p.t->m, cvs = s.oc / p.lanes;
  Expr task = te::MakeVar("ot"), tx = te::MakeVar("tx");
  Expr cv = te::FloorDiv(task, Expr(p.band)), row = te::FloorMod(task, Expr(p.band));
  Expr ty = band0 + row, tile = row * p.tw + tx;
  std::vector<Expr> mv;
  for (int64_t xi = 0; xi < a * a; ++xi) {
    mv.push_back(lower::VectorLoad(m, ((xi * cvs + cv) * p.tiles + tile) * p.lanes,
                                   static_cast<int>(p.lanes)));
  }
  std::vector<Buffer> tmp = VectorLocals(f, "wout", mt * a, p.lanes);
  const bool ragged = s.oh % mt != 0 || s.ow % mt != 0;
  Stmt body = TwoSided(p.t->at, mt, a, mv, tmp, [&](int64_t k, const Expr& value) {
    Expr oh = ty * mt + k / mt, ow = tx * mt + k % mt;
    Expr dst = (((n * cvs + cv) * s.oh + oh) * s.ow + ow) * p.lanes;
    Expr finished = EpilogueOnBlockVector(at, n, cv, oh, ow, value, static_cast<int>(p.lanes));
    Stmt st = lower::Store(out, dst, finished);
    return ragged ? lower::If(oh < Expr(s.oh) && ow < Expr(s.ow), st) : st;
  });
  body = lower::For(tx, p.tw, ForKind::kSerial, body);
  const int64_t tasks = cvs * p.band;
  return lower::For(task, tasks, tasks > 1 ? ForKind::kParallel : ForKind::kSerial, body);
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The output-channel block of the products when the kernel can run this conv under entry p (3 x 3
// stride 1 ungrouped, input in whole channel blocks, output blocked by the vector width), else 0.
int64_t KernelWeightBlock(const ConvShape& s, const Conv2dOcVecParams& p) {
  if (s.kh != 3 || s.kw != 3 || s.s_h != 1 || s.s_w != 1 || s.group != 1 || !Undilated(s)) {
    return 0;
  }
  if (s.in_block < 1 || s.c % s.in_block != 0 || s.out_block != p.lanes) return 0;
  return OcVecOcBlock(s, p);
}

}  // namespace

int64_t WinogradBandBytes(const Target* t) {
  if (t == nullptr) return int64_t{1} << 20;
  const CacheSizes caches = TargetCacheSizes(*t);
  return caches.l3 > 0 ? caches.l3 / 2 : caches.l2;
}

int64_t WinogradTileFor(const ConvShape& s, const Conv2dOcVecParams& entry) {
  if (s.in_block < kMinLayoutBlock ||
      s.c * s.oc < kMinProductsPerTransformedChannel * (s.c + s.oc)) {
    return 0;
  }
  if (KernelWeightBlock(s, BlockedOcVecParams(entry, s)) == 0) return 0;
  // The largest tile whose padded tiles use at least kMinTileUse of what the direct kernel's
  // tiles use of their columns: AVX-512's 14 columns take a 7-wide row whole, AVX2's 6 take it
  // as 6 + 1, whose one-column tile does a sixth of a full one's work at a fraction of its speed
  // (ResNet-18's 7x7 convs ran at 70% of the FMA peak there, 1.4x ORT's time).
  const int64_t owb = ChooseOwBlock(s.ow, entry.ow_block);
  const double direct_use =
      static_cast<double>(s.ow) / static_cast<double>(CeilDiv(s.ow, owb) * owb);
  for (int64_t m : {4, 2}) {
    const double covered = static_cast<double>(CeilDiv(s.oh, m) * CeilDiv(s.ow, m) * m * m);
    if (s.oh >= 2 * m && s.ow >= 2 * m && s.oh * s.ow >= kMinTileUse * direct_use * covered) {
      return m;
    }
  }
  return 0;
}

bool TryConv2dWinograd(const FusedGroup& group, const lower::ScheduleOptions& opts,
                       const Conv2dOcVecParams& entry, lower::LoweredFunc* out) {
  ConvGroup cg;
  if (!MatchWinogradConvGroup(group, &cg)) return false;
  const ConvShape& s = cg.s;
  const Conv2dOcVecParams params = BlockedOcVecParams(entry, s);
  Plan p;
  p.t = FindWinogradTransform(cg.conv->GetInt(kWinogradTileAttr, 0));
  p.ocb = KernelWeightBlock(s, params);
  if (p.t == nullptr || p.ocb == 0 || cg.conv->GetInt(kWinogradBlockAttr, 0) != p.ocb) {
    return false;
  }
  const int64_t a = p.t->alpha, mt = p.t->m;
  p.th = CeilDiv(s.oh, mt);
  p.tw = CeilDiv(s.ow, mt);
  // Bands of tile rows whose V and M fit half the last-level cache (a large image would
  // otherwise need workspaces of hundreds of MB): the largest divisor of the tile rows within it,
  // at least one row. Every step spreads a band over all the launch's threads, so the shared
  // cache is the one to fit, not one core's L2: bands sized for L2 made ResNet-18 1.3x slower at
  // two threads (its 56x56 layers ran seven bands of three small launches each) and no faster at
  // one.
  const int64_t row_bytes = a * a * (s.c + s.oc) * p.tw * int64_t{4};
  const int64_t budget_bytes = WinogradBandBytes(opts.target);
  p.band = p.th;
  while (p.band > 1 && (p.th % p.band != 0 || p.band * row_bytes > budget_bytes)) --p.band;
  p.tiles = p.band * p.tw;
  p.ph = p.th * mt + 2;
  p.pw = p.tw * mt + 2;
  p.xin = s.in_block;
  p.lanes = params.lanes;
  // Register tiles as the direct kernel's: the accumulators fill the register file but for the
  // weight vectors, the broadcast and a spare.
  const int64_t vectors = p.ocb / p.lanes;
  const int64_t budget = opts.target != nullptr ? AccumulatorRegisters(*opts.target) : 12;
  const int registers = TargetVectorRegisters(opts);
  // Lane steps keep a vector of inputs per row live besides its accumulators.
  p.steps = params.lane_steps == p.xin ? p.xin : 1;
  const int64_t most_rows = p.steps > 1 ? LaneTileRows(registers, vectors) : budget / vectors;
  p.rows = std::min(p.tiles, std::max<int64_t>(1, most_rows));

  lower::LoweredFunc f;
  Buffer xb, wb;
  EpilogueAt at;
  if (!BuildConvEpilogueAt(group, cg, &f, &xb, &wb, &at) ||
      !EpilogueVectorizes(at, static_cast<int>(p.lanes))) {
    return false;
  }
  Buffer padded =
      NewFloatBuffer(cg.conv->name + "_padded_ws", s.c * p.ph * p.pw, BufferScope::kWorkspace);
  Buffer v =
      NewFloatBuffer(cg.conv->name + "_wino_in_ws", a * a * s.c * p.tiles, BufferScope::kWorkspace);
  Buffer m = NewFloatBuffer(cg.conv->name + "_wino_out_ws", a * a * s.oc * p.tiles,
                            BufferScope::kWorkspace);
  f.workspaces.push_back(padded);
  f.workspaces.push_back(v);
  f.workspaces.push_back(m);
  Expr n = te::MakeVar("n"), band = te::MakeVar("band");
  const int64_t bands = p.th / p.band;
  Expr band0 = bands > 1 ? band * p.band : Expr(0);
  Stmt steps = lower::Seq({InputTransform(s, p, padded, v, band0, &f), Products(s, p, v, wb, m, &f),
                           OutputTransform(s, p, m, f.args.back().buffer, at, n, band0, &f)});
  if (bands > 1) steps = lower::For(band, bands, ForKind::kSerial, steps);
  // The padded copy holds one image, V and M one band of its tiles.
  f.body = lower::For(n, s.n, ForKind::kSerial,
                      lower::Seq({PadConvInput(s, xb, padded, n, p.ph, p.pw, opts), steps}));
  f.prefer_vector_bits = params.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
