// NCHW[x]c: the alter-layout pass (which convs and elementwise nodes it blocks, where it puts
// transforms) and the blocked kernels (channels-in-lanes and depthwise, forced per table entry)
// against a reference conv on the NCHW data, over blocks 4/8/16, NCHW or blocked input, strides,
// pads, reduction chunks and fused epilogues (bias, residual Add, Relu).
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/winograd.h>
#include <ember/compiler/target.h>
#include <ember/compiler/transform.h>
#include <ember/runtime/c_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "../../../compiler/schedule/schedule.h"
#include "../../../compiler/schedule/tuning.h"
#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;
using testing::ScopedEnv;
using testing::StrategyFor;

struct BlockedCase {
  int64_t n, c, h, w, oc, k, stride, pad, group;
  bool bias, relu, residual;
  int64_t in_block, out_block;
  int64_t dilation = 1;
};

std::string CaseName(const BlockedCase& c) {
  std::ostringstream os;
  os << "n" << c.n << "c" << c.c << "h" << c.h << "w" << c.w << "oc" << c.oc << "k" << c.k << "s"
     << c.stride << "p" << c.pad << "g" << c.group << (c.bias ? "b" : "") << (c.relu ? "r" : "")
     << (c.residual ? "a" : "") << " " << LayoutName(c.in_block) << "->" << LayoutName(c.out_block);
  if (c.dilation > 1) os << " d" << c.dilation;
  return os.str();
}

// NCHW data in NCHW[block]c order (block 0: a copy). *out has the blocked shape (HostArray is
// not copyable: its DLTensor points at its own bytes).
void ToBlocked(HostArray& nchw, int64_t block, HostArray* out) {
  const std::vector<int64_t>& s = nchw.shape;
  const int64_t plane = s[2] * s[3];
  for (int64_t i = 0; i < nchw.size(); ++i) {
    const int64_t p = i % plane, c = (i / plane) % s[1], n = i / (plane * s[1]);
    const int64_t dst =
        block == 0 ? i : ((n * (s[1] / block) + c / block) * plane + p) * block + c % block;
    out->data<float>()[dst] = nchw.data<float>()[i];
  }
}

// Output channels per tile of the channels-in-lanes kernel (its packing block) for this case.
int64_t OcVecPacking(const BlockedCase& c, const schedule::Conv2dOcVecParams& p) {
  const int64_t lanes = std::min(p.lanes, c.out_block), ocg = c.oc / c.group;
  if (p.oc_vectors < 2) return lanes;
  const bool one_pixel = (c.h + 2 * c.pad - c.k) / c.stride == 0 &&
                         (c.w + 2 * c.pad - c.k) / c.stride == 0 && c.dilation == 1;
  // One output pixel: the widest panel of up to single_pixel_vectors vectors that divides.
  for (int64_t v = one_pixel ? p.single_pixel_vectors : 0; v > 2; --v) {
    if (ocg % (v * lanes) == 0) return v * lanes;
  }
  if (ocg % (2 * lanes) == 0) return 2 * lanes;
  if (ocg % (3 * lanes) == 0) return 3 * lanes;  // three vectors: 48 in 16s, 24 in 8s
  // Blocks narrower than the entry's vectors: as many as fill up to three of them (40 in 8s).
  for (int64_t blocks = 3 * p.lanes / lanes; lanes < p.lanes && blocks > 1; --blocks) {
    if (ocg % (blocks * lanes) == 0) return blocks * lanes;
  }
  return lanes;
}

// Weights as emberc stores them for the conv: plain OIHW, packed blocks (PackConvWeights) or
// Winograd-transformed (WinogradConvWeights: then `block` is kWinogradBlockAttr).
struct WeightForm {
  int64_t block = 0, ic_block = 0;
  int64_t winograd_tile = 0;
};

// OIHW 3 x 3 weights transformed as WinogradConvWeights stores them: U = G g G^T per channel
// pair, [alpha^2][OC/block][IC][block]; *u has the declared shape [OC][IC][alpha][alpha].
void TransformLikeEmberc(HostArray& w, int64_t tile, int64_t block, HostArray* u) {
  const WinogradTransform& t = *FindWinogradTransform(tile);
  const int64_t oc = w.shape[0], ic = w.shape[1], a = t.alpha;
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t p = 0; p < a; ++p)
        for (int64_t q = 0; q < a; ++q) {
          double sum = 0;  // (G g G^T)[p][q]
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              sum += t.g[p * 3 + kh] * t.g[q * 3 + kw] *
                     w.data<float>()[((o * ic + i) * 3 + kh) * 3 + kw];
            }
          u->data<float>()[(((p * a + q) * (oc / block) + o / block) * ic + i) * block +
                           o % block] = static_cast<float>(sum);
        }
}

// Compiles the blocked conv group with `schedule` forced (null: default schedule), its weights
// in `form`, checks that the kernel's marker (an accumulator or local name) appears in its loop
// IR, runs it and compares with a direct conv on the NCHW data. *llvm_ir, if given, receives the
// kernel's LLVM IR.
void CheckBlockedConv(const char* schedule, const char* marker, const WeightForm& form,
                      const BlockedCase& bc, std::string* llvm_ir = nullptr,
                      std::string* loop_ir = nullptr) {
  const int64_t packed_block = form.block, packed_ic_block = form.ic_block;
  SCOPED_TRACE(std::string(schedule != nullptr ? schedule : "default") + " " + CaseName(bc) +
               " packed " + std::to_string(packed_block) + "/" + std::to_string(packed_ic_block) +
               " winograd " + std::to_string(form.winograd_tile));
  ScopedEnv force("EMBER_SCHEDULE", schedule != nullptr ? schedule : "");
  ScopedEnv disable("EMBER_DISABLE_SCHEDULES", schedule != nullptr ? "0" : "1");
  const int64_t span = (bc.k - 1) * bc.dilation + 1;
  const int64_t oh = (bc.h + 2 * bc.pad - span) / bc.stride + 1;
  const int64_t ow = (bc.w + 2 * bc.pad - span) / bc.stride + 1;
  const int64_t icg = bc.c / bc.group;
  const std::vector<int64_t> xshape{bc.n, bc.c, bc.h, bc.w}, oshape{bc.n, bc.oc, oh, ow};
  const std::vector<int64_t> oblocked = BlockedShape(oshape, bc.out_block);
  KernelGraph kg;
  int x = kg.Input("x", BlockedShape(xshape, bc.in_block));
  const int64_t alpha = form.winograd_tile + 2;
  const std::vector<int64_t> wshape = form.winograd_tile > 0
                                          ? std::vector<int64_t>{bc.oc, icg, alpha, alpha}
                                          : std::vector<int64_t>{bc.oc, icg, bc.k, bc.k};
  int w = kg.Input("w", wshape);
  std::vector<int> conv_in{x, w};
  if (bc.bias) conv_in.push_back(kg.Input("b", {bc.oc}));
  int r = bc.residual ? kg.Input("r", oblocked) : -1;
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{bc.k, bc.k}},
                {"strides", std::vector<int64_t>{bc.stride, bc.stride}},
                {"dilations", std::vector<int64_t>{bc.dilation, bc.dilation}},
                {"pads", std::vector<int64_t>{bc.pad, bc.pad, bc.pad, bc.pad}},
                {"group", bc.group},
                {kDataLayoutAttr, LayoutName(bc.in_block)},
                {kOutLayoutAttr, LayoutName(bc.out_block)}};
  if (form.winograd_tile > 0) {
    attrs[kWinogradTileAttr] = form.winograd_tile;
    attrs[kWinogradBlockAttr] = packed_block;
  } else if (packed_block > 1) {
    attrs[kPackedWeightBlockAttr] = packed_block;
    if (packed_ic_block > 1) attrs[kPackedWeightIcBlockAttr] = packed_ic_block;
  }
  int y = kg.Add("Conv", conv_in, {TensorType{oblocked, kFloat32}}, attrs)[0];
  if (bc.residual) y = kg.Add("Add", {y, r}, {TensorType{oblocked, kFloat32}})[0];
  if (bc.relu) y = kg.Add("Relu", {y}, {TensorType{oblocked, kFloat32}})[0];
  std::string loops;
  std::vector<std::pair<std::string, std::string*>> dumps = {{"kernels.loop.txt", &loops}};
  if (llvm_ir != nullptr) dumps.push_back({"kernels.ll", llvm_ir});
  std::unique_ptr<Library> lib = testing::BuildKernelWithDumps(kg, y, dumps);
  if (marker != nullptr) {
    EXPECT_NE(loops.find(marker), std::string::npos) << "schedule did not take the group";
  }
  if (loop_ir != nullptr) *loop_ir = loops;
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx(xshape, kFloat32), hw({bc.oc, icg, bc.k, bc.k}, kFloat32), hb({bc.oc}, kFloat32),
      hr(oshape, kFloat32), out(oblocked, kFloat32);
  hx.FillRandom(21);
  hw.FillRandom(22);
  hb.FillRandom(23);
  hr.FillRandom(24);
  HostArray bx(BlockedShape(xshape, bc.in_block), kFloat32), br(oblocked, kFloat32);
  ToBlocked(hx, bc.in_block, &bx);
  ToBlocked(hr, bc.out_block, &br);
  HostArray hw_call(wshape, kFloat32);
  if (form.winograd_tile > 0) {
    TransformLikeEmberc(hw, form.winograd_tile, packed_block, &hw_call);
  } else {
    hw_call.bytes = hw.bytes;
  }
  if (form.winograd_tile == 0 && packed_block > 1) {
    testing::PackWeightsLikeEmberc(&hw_call, packed_block, std::max<int64_t>(1, packed_ic_block));
  }
  std::vector<HostArray*> args{&bx, &hw_call};
  if (bc.bias) args.push_back(&hb);
  if (bc.residual) args.push_back(&br);
  args.push_back(&out);
  ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
  const testing::ConvDims dims{bc.c,      bc.h,   bc.w,     bc.oc,      bc.k,
                               bc.stride, bc.pad, bc.group, bc.dilation};
  int bad = 0;
  for (int64_t n = 0; n < bc.n; ++n)
    for (int64_t o = 0; o < bc.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = (bc.bias ? hb.data<float>()[o] : 0.0) +
                       testing::ReferenceConvAt(hx, hw, dims, n, o, i, j);
          const int64_t nchw = ((n * bc.oc + o) * oh + i) * ow + j;
          if (bc.residual) acc += hr.data<float>()[nchw];
          if (bc.relu) acc = std::max(acc, 0.0);
          const int64_t b = bc.out_block;
          const float got =
              out.data<float>()[(((n * (bc.oc / b) + o / b) * oh + i) * ow + j) * b + o % b];
          if (std::fabs(got - acc) > 1e-4 + 1e-4 * std::fabs(acc) && ++bad <= 5) {
            ADD_FAILURE() << "out[" << n << "," << o << "," << i << "," << j << "] = " << got
                          << ", expected " << acc;
          }
        }
  EXPECT_EQ(bad, 0);
}

const schedule::ScheduleEntry& Entry(const char* name) {
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (std::string(e.name) == name) return e;
  }
  throw std::runtime_error(std::string("no schedule entry ") + name);
}

TEST(BlockedLayout, ChannelsInLanesKernelMatchesTheReference) {
  const std::vector<BlockedCase> cases = {
      {1, 3, 15, 15, 32, 7, 2, 3, 1, true, true, false, 0, 16},    // stem: NCHW in
      {1, 32, 12, 13, 32, 3, 1, 1, 1, true, true, true, 16, 16},   // residual, tail columns
      {2, 16, 9, 9, 48, 3, 2, 1, 1, false, false, false, 16, 16},  // stride 2, 3 vectors
      {1, 16, 7, 5, 16, 3, 1, 1, 1, true, true, false, 16, 16},    // narrow: multi-row tiles
      {1, 256, 7, 7, 32, 3, 1, 1, 1, true, false, true, 16, 16},   // reduction in chunks
      {1, 32, 14, 14, 24, 1, 1, 0, 1, true, false, true, 16, 8},   // 1x1 into a narrow block
      {1, 24, 10, 10, 64, 1, 1, 0, 1, true, true, false, 8, 16},   // narrow block in
      {1, 12, 6, 6, 12, 3, 1, 1, 1, true, true, true, 4, 4},       // 4-wide blocks, 3 vectors
      {1, 16, 8, 8, 24, 1, 1, 0, 1, true, false, true, 16, 8},     // 24 in 8s: 3 vectors
      {1, 256, 7, 7, 24, 3, 1, 1, 1, true, true, true, 16, 8},     // 24 in 8s, in chunks
      {1, 32, 10, 10, 40, 1, 1, 0, 1, true, false, true, 16, 8},   // 40 in 8s: 16 + 16 + 8
      {1, 16, 9, 9, 40, 3, 2, 1, 1, true, true, false, 8, 8},      // 40 in 8s, 3 x 3 stride 2
      {1, 24, 11, 11, 32, 3, 2, 0, 1, false, true, false, 0, 16},  // NCHW in, no padding
      // Dilated (IS-Net's RSU-4F blocks: pad = dilation keeps the plane), strided, NCHW in.
      {1, 32, 16, 16, 32, 3, 1, 4, 1, true, true, true, 16, 16, 4},
      {1, 16, 13, 11, 48, 3, 2, 2, 1, false, false, false, 16, 16, 2},
      {1, 3, 15, 15, 32, 3, 1, 2, 1, true, false, false, 0, 16, 2},
      {1, 24, 12, 12, 24, 3, 1, 2, 1, true, true, false, 8, 8, 2},
      // 1x1 convs whose weights outweigh their input: the tiles take the plane as one row
      // (OcVecTileShape), 49 pixels in 8-wide tiles of 6 + 1 and 225 in 16-wide ones of 14 + 1.
      {1, 64, 7, 7, 64, 1, 1, 0, 1, true, true, true, 8, 8},
      {1, 64, 7, 7, 64, 1, 1, 0, 1, true, false, false, 0, 8},
      {1, 16, 15, 15, 256, 1, 1, 0, 1, true, true, true, 16, 16},
  };
  for (const char* name : {"conv2d_nchw_ocvec_avx512", "conv2d_nchw_ocvec_avx2"}) {
    const schedule::ScheduleEntry& e = Entry(name);
    for (const BlockedCase& c : cases) {
      if (c.out_block > e.conv_ocvec.lanes) continue;  // the kernel takes blocks it can fill
      // As PackConvWeights packs them (input channels blocked like the data), and without.
      const int64_t block = OcVecPacking(c, e.conv_ocvec);
      // A three-vector tile has a third accumulator per column; blocks narrower than the
      // entry's vectors accumulate in the widest power of two it has and the tile fills:
      const bool three = block == 3 * std::min(e.conv_ocvec.lanes, c.out_block);
      // blocks of 24 in 8s on AVX-512 accumulate 16 + 8, 12 in 4s 8 + 4.
      const bool wide = c.out_block < e.conv_ocvec.lanes && block > c.out_block;
      const int64_t piece = std::min(e.conv_ocvec.lanes, block) >= 16 ? 16 : 8;
      const std::string marker = wide ? "accm0_0[0] = (<buffer load> + (float32x" +
                                            std::to_string(piece) + "(<buffer load>) *"
                                      : (three ? "accm0_2[" : "accm0_0[");
      CheckBlockedConv(name, marker.c_str(), {block, c.in_block}, c);
      if (c.in_block > 0) CheckBlockedConv(name, marker.c_str(), {block, 0}, c);
    }
  }
}

// The tiles take a 1x1 conv's plane as one row where its rows would end in tail tiles and are
// not chunked for the cache; any other conv, or an epilogue that does not read the plane flat,
// keeps its rows.
TEST(BlockedLayout, OneByOneConvsTileTheirPlaneAsOneRow) {
  const Target host = Target::Host();
  schedule::ConvShape s{};
  s.n = 1;
  s.c = s.oc = s.icg = s.ocg = 64;
  s.h = s.w = s.oh = s.ow = 7;
  s.kh = s.kw = s.s_h = s.s_w = s.group = 1;
  s.in_block = s.out_block = 8;
  const schedule::ConvShape flat = schedule::OcVecTileShape(s, 6, true, &host);
  EXPECT_EQ(flat.oh, 1);
  EXPECT_EQ(flat.h, 1);
  EXPECT_EQ(flat.ow, 49);
  EXPECT_EQ(flat.w, 49);
  EXPECT_EQ(flat.oc, s.oc);
  auto keeps_rows = [&](const schedule::ConvShape& c, int64_t ow_block, bool epilogue_flat) {
    const schedule::ConvShape t = schedule::OcVecTileShape(c, ow_block, epilogue_flat, &host);
    return t.oh == c.oh && t.ow == c.ow && t.h == c.h && t.w == c.w;
  };
  EXPECT_TRUE(keeps_rows(s, 6, false));  // an epilogue operand broadcast along a spatial axis
  EXPECT_TRUE(keeps_rows(s, 7, true));   // the tiles cover the rows whole
  EXPECT_FALSE(keeps_rows(s, 6, true));
  schedule::ConvShape k3 = s;
  k3.kh = k3.kw = 3;
  k3.pad_t = k3.pad_l = 1;
  EXPECT_TRUE(keeps_rows(k3, 6, true));
  schedule::ConvShape strided = s;
  strided.h = strided.w = 13;
  strided.s_h = strided.s_w = 2;
  EXPECT_TRUE(keeps_rows(strided, 6, true));
  // A big input whose rows are chunked so that each chunk stays in L2.
  schedule::ConvShape big = s;
  big.c = big.icg = 16;
  big.oc = big.ocg = 96;
  big.h = big.w = big.oh = big.ow = 113;
  ASSERT_LT(schedule::CacheRowChunk(big, host), big.oh);
  EXPECT_TRUE(keeps_rows(big, 6, true));
}

// The NEON entry takes a pixel's four channels (NCHW4c) or a row's nearby columns (NCHW, stride 1
// or 2) in one vector load and multiplies by its lanes; Winograd's products take a tile's four
// channels alike. The marker fails when the lanes are not read.
TEST(BlockedLayout, NeonKernelsMultiplyByLanesOfOneLoad) {
  const std::vector<BlockedCase> cases = {
      {1, 3, 15, 15, 16, 7, 2, 3, 1, true, true, false, 0, 4},     // stem: NCHW in, stride 2
      {1, 3, 11, 9, 8, 3, 1, 1, 1, false, false, false, 0, 4},     // NCHW in, stride 1
      {1, 16, 12, 13, 16, 3, 1, 1, 1, true, true, true, 4, 4},     // residual, tail columns
      {1, 16, 12, 13, 16, 3, 1, 2, 1, true, true, true, 4, 4, 2},  // dilated
      {1, 16, 7, 5, 16, 3, 1, 1, 1, true, true, false, 4, 4},      // narrow: multi-row tiles
      {1, 256, 7, 7, 32, 3, 1, 1, 1, true, false, true, 4, 4},     // reduction in chunks
      {2, 16, 9, 9, 24, 3, 2, 1, 1, false, false, false, 4, 4},    // stride 2, 3 vectors
      {1, 32, 14, 14, 24, 1, 1, 0, 1, true, false, true, 4, 4},    // 1x1
      {1, 72, 1, 1, 24, 1, 1, 0, 1, true, true, false, 4, 4},      // SE squeeze: 6 vectors
      {1, 24, 1, 1, 72, 1, 1, 0, 1, true, false, true, 4, 4},      // SE excite: 9 vectors
  };
  const char* name = "conv2d_nchw_ocvec_neon";
  const schedule::ScheduleEntry& e = Entry(name);
  for (const BlockedCase& c : cases) {
    CheckBlockedConv(name, "lane(", {OcVecPacking(c, e.conv_ocvec), c.in_block}, c);
  }
  // A one-pixel output's panel is as wide as its channels allow (up to 14 vectors): the ninth
  // vector's accumulator is there.
  const BlockedCase excite{1, 24, 1, 1, 72, 1, 1, 0, 1, true, false, false, 4, 4};
  ASSERT_EQ(OcVecPacking(excite, e.conv_ocvec), 36);
  CheckBlockedConv(name, "accm0_8[", {36, excite.in_block}, excite);
  // A narrower one: the 24-channel squeeze's 6 vectors take two of the 18 input blocks per pass
  // of its channel loop (`icu`), so the loop control and input loads meet 48 FMAs, not 24; with
  // an odd count of blocks (9) the loop keeps one per pass.
  const BlockedCase squeeze{1, 72, 1, 1, 24, 1, 1, 0, 1, true, true, false, 4, 4};
  CheckBlockedConv(name, "for icu in [0, 9)", {OcVecPacking(squeeze, e.conv_ocvec), 4}, squeeze);
  const BlockedCase odd{1, 36, 1, 1, 24, 1, 1, 0, 1, true, true, false, 4, 4};
  CheckBlockedConv(name, "lane(", {OcVecPacking(odd, e.conv_ocvec), 4}, odd);
  for (int64_t tile : {2, 4}) {
    const BlockedCase c{1, 8, 10, 9, 16, 3, 1, 1, 1, true, true, true, 4, 4};
    CheckBlockedConv(name, "lane(", {OcVecPacking(c, e.conv_ocvec), 0, tile}, c);
  }
}

// A row of 13 in AVX2 tiles of 6 ends in a one-column tile of two accumulators: it keeps four
// partial sums of each (over the lanes of the input's blocks) so that 8 FMAs are in flight.
TEST(BlockedLayout, TailTilesSplitTheirSumsToFillTheFmaPipes) {
  const BlockedCase c{1, 32, 12, 13, 16, 3, 1, 1, 1, true, true, true, 8, 8};
  const schedule::ScheduleEntry& e = Entry("conv2d_nchw_ocvec_avx2");
  CheckBlockedConv("conv2d_nchw_ocvec_avx2", "acct0_0_s3[", {OcVecPacking(c, e.conv_ocvec), 8}, c);
}

// Small planes: every reduction step prefetches the next chunk's weights (past the last channel
// block's, the clamped end of the buffer) while the row groups reuse this chunk's from L1.
TEST(BlockedLayout, SmallPlanesPrefetchTheNextChunksWeights) {
  const BlockedCase c{1, 256, 7, 7, 64, 3, 1, 1, 1, true, false, true, 16, 16};
  CheckBlockedConv("conv2d_nchw_ocvec_avx512", "prefetch ", {32, 16}, c);
}

// Small planes of fewer channel blocks than kMinTasks: a block's row groups (rows 0-1, 2-3, 4-5
// of 7, then row 6 alone) in tasks of their own, every row still computed once.
TEST(BlockedLayout, SmallPlanesOfFewBlocksSplitTheirRowsBetweenTasks) {
  const std::vector<std::pair<BlockedCase, const char*>> cases = {
      // One block: a task per row group and one for row 6.
      {{1, 64, 7, 7, 32, 1, 1, 0, 1, true, true, true, 16, 16}, "parallel for ob in [0, 4)"},
      {{1, 32, 7, 7, 32, 3, 1, 1, 1, true, false, false, 16, 16}, "parallel for ob in [0, 4)"},
      // Five blocks (MobileNetV2's 160 channels): two tasks a block, rows 0-3 and 4-6.
      {{1, 32, 7, 7, 160, 1, 1, 0, 1, true, true, false, 16, 16}, "parallel for ob in [0, 10)"},
  };
  for (const auto& [c, marker] : cases) {
    CheckBlockedConv("conv2d_nchw_ocvec_avx512", marker, {32, 16}, c);
  }
}

TEST(BlockedLayout, DepthwiseKernelMatchesTheReference) {
  const std::vector<BlockedCase> cases = {
      {1, 32, 12, 13, 32, 3, 1, 1, 32, true, true, false, 16, 16},      // odd width
      {2, 16, 11, 11, 16, 3, 2, 1, 16, true, false, true, 16, 16},      // stride 2, residual
      {1, 16, 9, 9, 16, 5, 1, 2, 16, false, true, false, 16, 16},       // 5x5
      {1, 24, 8, 8, 24, 3, 1, 1, 24, true, true, false, 8, 8},          // narrow block
      {1, 16, 4, 3, 16, 3, 1, 0, 16, true, false, false, 16, 16},       // no interior columns
      {1, 32, 12, 13, 32, 3, 1, 2, 32, true, true, false, 16, 16, 2},   // dilated, "same"
      {1, 16, 11, 11, 16, 3, 2, 2, 16, true, false, true, 16, 16, 2},   // dilated, stride 2
      {1, 24, 9, 9, 24, 3, 1, 3, 24, false, true, false, 8, 8, 3},      // 3 border rows a side
      {1, 16, 4, 5, 16, 3, 1, 4, 16, true, false, false, 16, 16, 4},    // one tap row inside
      {1, 16, 20, 19, 16, 3, 1, 8, 16, true, true, false, 16, 16, 8},   // 8 border rows a side
      {1, 8, 16, 16, 8, 3, 1, 8, 8, true, false, true, 8, 8, 8},        // border rows only
      {1, 16, 23, 21, 16, 3, 2, 6, 16, false, true, false, 16, 16, 6},  // stride 2, 3 a side
      // Blocks half the entry's vectors, stride 1: pixel pairs (odd widths leave one pixel).
      {1, 24, 10, 13, 24, 5, 1, 2, 24, true, true, true, 8, 8},      // 5x5, residual
      {1, 16, 9, 12, 16, 3, 1, 2, 16, true, false, false, 8, 8, 2},  // dilated
      {1, 12, 8, 9, 12, 3, 1, 1, 12, false, true, false, 4, 4},      // 4-wide blocks, no bias
      // Taps that would leave too few registers for a tile: read from memory per tile.
      {1, 16, 12, 14, 16, 7, 1, 3, 16, true, true, false, 16, 16},  // 7x7
      {1, 8, 13, 15, 8, 7, 2, 3, 8, true, false, true, 8, 8},       // 7x7 stride 2, residual
      {1, 32, 9, 11, 32, 5, 2, 2, 32, false, true, false, 8, 8},    // 5x5 stride 2, no bias
      {1, 12, 9, 10, 12, 5, 1, 2, 12, true, true, false, 4, 4},     // 5x5 in 4-wide blocks
  };
  for (const char* name : {"depthwise_conv2d_avx512", "depthwise_conv2d_avx2"}) {
    const int64_t lanes = Entry(name).depthwise.lanes, registers = lanes == 16 ? 32 : 16;
    for (const BlockedCase& c : cases) {
      if (c.out_block > lanes) continue;  // blocks the kernel can fill
      // Every tap in a register where that leaves half a tile of 8; else taps from memory,
      // which pixel pairs (their weights held twice over) do not take: a pixel a vector then.
      const bool taps_held = c.k * c.k + 3 + 4 <= registers;
      const bool pairs_wanted = c.stride == 1 && lanes >= 2 * c.out_block && taps_held;
      // Pairs where two interior columns read no padding.
      const bool pairs =
          pairs_wanted && c.w - (c.k - 1) * c.dilation >= 2 && c.h > (c.k - 1) * c.dilation;
      std::string ir;
      CheckBlockedConv(name, pairs ? "tp0[0] = " : "acc", {c.out_block, 0}, c, &ir);
      EXPECT_EQ(ir.find("wvec") != std::string::npos, taps_held) << name << " " << CaseName(c);
    }
  }
}

// The NEON entry's shape: accumulators that start from the task's bias vector (the marker), tasks
// of several rows on small planes, border rows that leave out the tap rows in the padding, the
// first/last task of a channel block running them, a narrower tile for the rest of a row.
TEST(BlockedLayout, NeonDepthwiseStartsFromTheBiasOverBlocksOfRows) {
  const std::vector<BlockedCase> cases = {
      {1, 8, 9, 9, 8, 3, 1, 1, 8, true, true, false, 4, 4},       // one task per channel block
      {1, 8, 30, 20, 8, 3, 1, 1, 8, true, true, true, 4, 4},      // 3-row tasks, a short last
      {2, 8, 11, 11, 8, 3, 2, 1, 8, true, false, true, 4, 4},     // stride 2
      {1, 4, 9, 10, 4, 5, 1, 2, 4, true, true, false, 4, 4},      // 5x5: two border rows a side
      {1, 8, 4, 4, 8, 3, 1, 0, 8, true, false, false, 4, 4},      // no border rows
      {1, 8, 10, 9, 8, 3, 1, 2, 8, true, true, false, 4, 4, 2},   // dilated
      {1, 8, 18, 17, 8, 3, 1, 8, 8, true, true, false, 4, 4, 8},  // 8 border rows a side
      {1, 8, 12, 15, 8, 7, 1, 3, 8, true, true, true, 4, 4},      // 7x7: taps from memory
      {1, 4, 16, 16, 4, 7, 2, 3, 4, true, false, false, 4, 4},    // 7x7 stride 2
  };
  for (const BlockedCase& c : cases) {
    CheckBlockedConv("depthwise_conv2d_neon", "[0] = bias[0]", {c.out_block, 0}, c);
  }
  CheckBlockedConv("depthwise_conv2d_neon", "wvec0[", {4, 0},
                   {1, 8, 7, 7, 8, 3, 1, 1, 8, false, true, false, 4, 4});  // no bias
}

// Stride 1 on NEON: interior rows two at a time (accumulators "accp..."), so the input rows the
// two share are loaded once; tasks of one row would leave no pair, so they take two at least.
TEST(BlockedLayout, NeonDepthwiseComputesStrideOneRowsInPairs) {
  const std::vector<BlockedCase> cases = {
      {1, 8, 20, 40, 8, 3, 1, 1, 8, true, true, false, 4, 4},   // wide rows: tasks of 2
      {1, 8, 13, 13, 8, 3, 1, 1, 8, true, false, true, 4, 4},   // odd rows per task
      {1, 4, 12, 16, 4, 5, 1, 2, 4, false, true, false, 4, 4},  // 5x5, no bias
      {1, 8, 15, 17, 8, 7, 1, 3, 8, true, true, false, 4, 4},   // 7x7, taps from memory
  };
  for (const BlockedCase& c : cases) {
    CheckBlockedConv("depthwise_conv2d_neon", "accpmt0", {c.out_block, 0}, c);
  }
}

// NEON row pairs tile 6 columns of two rows (12 accumulators) where a row's interior makes two
// such tiles, else 4; and a row whose interior is one tile and a rest of more than half a tile
// runs as two tiles of half of it through the tile loop (one block with both tiles' accumulators
// spilled). The loop IR names the tiles' accumulators and loops.
TEST(BlockedLayout, NeonDepthwiseTilesRowsSoThatNoBlockHoldsTwoTiles) {
  struct Tiling {
    BlockedCase c;
    const char* present;
    const char* absent;
  };
  const std::vector<Tiling> cases = {
      // 14 interior columns: 6x2 tiles, twice, and a rest of 2.
      {{1, 8, 10, 16, 8, 3, 1, 1, 8, true, true, false, 4, 4}, "accpmt11[", "accpmt12["},
      // 10 interior columns: one 6x2 tile would leave a rest, so 4x2 tiles.
      {{1, 8, 10, 12, 8, 3, 1, 1, 8, true, true, false, 4, 4}, "accpmt7[", "accpmt8["},
      // Stride 2, 13 interior columns of a 14-pixel row: two tiles of 6 (not 8 and 5) and one.
      {{1, 8, 9, 28, 8, 3, 2, 1, 8, true, true, false, 4, 4}, "for imt in [0, 2)", "accimt6["},
  };
  for (const Tiling& t : cases) {
    std::string loops;
    CheckBlockedConv("depthwise_conv2d_neon", t.present, {t.c.out_block, 0}, t.c, nullptr, &loops);
    EXPECT_EQ(loops.find(t.absent), std::string::npos) << CaseName(t.c) << ": " << t.absent;
  }
}

// Tap rows more than the paired load's reach apart (1008 bytes: 3x3 taps on rows of 32 NCHW4c
// pixels or more) load from bases of their own, so that AArch64 can pair each row's loads;
// nearer rows share one.
TEST(BlockedLayout, NeonDepthwiseLoadsFarTapRowsFromStreamsOfTheirOwn) {
  const std::vector<BlockedCase> far = {
      {1, 8, 6, 40, 8, 3, 1, 1, 8, true, true, false, 4, 4},       // 3x3: rows 640 bytes apart
      {1, 8, 7, 35, 8, 3, 2, 1, 8, true, false, true, 4, 4},       // stride 2, residual
      {1, 4, 9, 20, 4, 5, 1, 2, 4, true, true, false, 4, 4},       // 5x5: 4 rows of 320 bytes
      {1, 8, 10, 33, 8, 3, 1, 2, 8, false, true, false, 4, 4, 2},  // dilated, no bias
  };
  // te::StreamBase, as codegen emits it: an empty asm that hands its operand back.
  const char* stream_base = "asm \"\", \"=r,0\"";
  for (const BlockedCase& c : far) {
    std::string ir;
    CheckBlockedConv("depthwise_conv2d_neon", "wvec0[", {c.out_block, 0}, c, &ir);
    EXPECT_NE(ir.find(stream_base), std::string::npos) << CaseName(c);
  }
  std::string ir;
  CheckBlockedConv("depthwise_conv2d_neon", "wvec0[", {4, 0},
                   {1, 8, 6, 31, 8, 3, 1, 1, 8, true, true, false, 4, 4}, &ir);
  EXPECT_EQ(ir.find(stream_base), std::string::npos);
}

TEST(BlockedLayout, DefaultScheduleComputesBlockedConvs) {
  CheckBlockedConv(nullptr, nullptr, {}, {1, 16, 6, 7, 32, 3, 1, 1, 1, true, true, true, 16, 16});
  CheckBlockedConv(nullptr, nullptr, {}, {1, 3, 8, 8, 8, 3, 2, 1, 1, false, false, false, 0, 8});
  CheckBlockedConv(nullptr, nullptr, {}, {1, 8, 5, 5, 8, 3, 1, 1, 8, true, true, false, 8, 8});
  // Weights packed for the blocked kernel, read by the reference.
  CheckBlockedConv(nullptr, nullptr, {32, 16},
                   {1, 32, 5, 6, 64, 3, 1, 1, 1, true, true, false, 16, 16});
  // Winograd-transformed weights, the kernel recovered from them (g = R U R^T).
  for (int64_t tile : {2, 4}) {
    CheckBlockedConv(nullptr, nullptr, {32, 0, tile},
                     {1, 32, 5, 6, 64, 3, 1, 1, 1, true, true, true, 16, 16});
  }
}

// Winograd F(2x2) and F(4x4) through the channels-in-lanes entries' blockings (the loop nests
// are portable): tiles past the output's edge, several register tiles plus a partial one,
// batches, no padding, blocks of different widths in and out, epilogues.
TEST(BlockedLayout, WinogradKernelMatchesTheReference) {
  const std::vector<BlockedCase> cases = {
      {1, 32, 8, 8, 32, 3, 1, 1, 1, true, true, false, 16, 16},     // one tile row per 4
      {2, 32, 12, 12, 64, 3, 1, 1, 1, true, true, true, 16, 16},    // batch, residual
      {1, 32, 10, 9, 32, 3, 1, 1, 1, false, false, false, 16, 16},  // ragged tiles
      {1, 16, 30, 30, 32, 3, 1, 1, 1, true, false, true, 16, 16},   // 64 tiles: partial
      {1, 48, 10, 10, 32, 3, 1, 0, 1, true, true, false, 16, 16},   // unpadded
      {1, 32, 8, 8, 32, 3, 1, 1, 1, true, true, true, 8, 16},       // narrower block in
      {1, 8, 6, 6, 8, 3, 1, 1, 1, true, true, true, 4, 4},          // 4-wide blocks
      {1, 16, 7, 7, 16, 3, 1, 2, 1, true, false, false, 16, 16},    // pads 2
      {1, 32, 88, 88, 32, 3, 1, 1, 1, true, true, true, 16, 16},    // bands of tile rows
      {1, 96, 10, 10, 24, 3, 1, 1, 1, true, true, false, 16, 8},    // 24 channels out, by 8
  };
  for (const char* name : {"conv2d_nchw_ocvec_avx512", "conv2d_nchw_ocvec_avx2",
                           "conv2d_nchw_ocvec_neon", "conv2d_nchw_ocvec_neon32"}) {
    const schedule::ScheduleEntry& e = Entry(name);
    for (const BlockedCase& c : cases) {
      if (c.out_block > e.conv_ocvec.lanes) continue;  // the kernel takes blocks it can fill
      for (int64_t tile : {2, 4}) {
        CheckBlockedConv(name, "win0[", {OcVecPacking(c, e.conv_ocvec), 0, tile}, c);
      }
    }
  }
}

// Winograd pays where a tile's C x OC products outweigh transforming its C + OC channels: 96
// channels in and 24 out (PP-OCRv4's detection head) qualify, 32 in and 16 out do not.
TEST(BlockedLayout, WinogradTakesFewOutputChannelsOverManyInputs) {
  const schedule::Conv2dOcVecParams& p = Entry("conv2d_nchw_ocvec_avx512").conv_ocvec;
  auto shape = [](int64_t c, int64_t oc, int64_t out_block) {
    return schedule::ConvShape{1, c, 160, 160, oc, 160, 160, 3,  3,
                               1, 1, 1,   1,   1,  c,   oc,  16, out_block};
  };
  EXPECT_EQ(schedule::WinogradTileFor(shape(96, 24, 8), p), 4);
  EXPECT_EQ(schedule::WinogradTileFor(shape(64, 64, 16), p), 4);
  EXPECT_EQ(schedule::WinogradTileFor(shape(32, 16, 16), p), 0);
  EXPECT_EQ(schedule::WinogradTileFor(shape(16, 16, 16), p), 0);
}

// Small planes: Winograd where its padded tiles waste less than the direct kernel's tail tiles.
// ResNet-18's 7x7 layers stay direct on AVX-512 (14 columns per tile take two whole rows) and
// take F(2x2) on AVX2 (6 columns per tile: each row ends in a one-column tile); its 14x14 layers
// take F(2x2) on AVX-512 and F(4x4) on AVX2.
TEST(BlockedLayout, WinogradOnSmallPlanesWeighsTheDirectKernelsTails) {
  auto shape = [](int64_t plane, int64_t c, int64_t block) {
    return schedule::ConvShape{1, c, plane, plane, c, plane, plane, 3,     3,
                               1, 1, 1,     1,     1, c,     c,     block, block};
  };
  const schedule::Conv2dOcVecParams& avx512 = Entry("conv2d_nchw_ocvec_avx512").conv_ocvec;
  const schedule::Conv2dOcVecParams& avx2 = Entry("conv2d_nchw_ocvec_avx2").conv_ocvec;
  EXPECT_EQ(schedule::WinogradTileFor(shape(7, 512, 16), avx512), 0);
  EXPECT_EQ(schedule::WinogradTileFor(shape(7, 512, 8), avx2), 2);
  EXPECT_EQ(schedule::WinogradTileFor(shape(14, 256, 16), avx512), 2);
  EXPECT_EQ(schedule::WinogradTileFor(shape(14, 256, 8), avx2), 4);
  // Planes the tiles cover whole, either kernel.
  EXPECT_EQ(schedule::WinogradTileFor(shape(56, 64, 16), avx512), 4);
  EXPECT_EQ(schedule::WinogradTileFor(shape(56, 64, 8), avx2), 4);
  EXPECT_EQ(schedule::WinogradTileFor(shape(6, 512, 8), avx2), 2);
  // Too small for a tile either way.
  EXPECT_EQ(schedule::WinogradTileFor(shape(3, 512, 8), avx2), 0);
}

// ---- MaxPool ----

struct PoolCase {
  int64_t n, c, h, w, k, stride, pad, block;
  bool ceil_mode;
};

// The blocked MaxPool kernel (and, with schedules disabled, the default schedule) against a
// direct max over each window of the NCHW data.
void CheckBlockedMaxPool(const PoolCase& pc, bool schedules, bool relu = false) {
  SCOPED_TRACE("maxpool c" + std::to_string(pc.c) + " " + std::to_string(pc.h) + "x" +
               std::to_string(pc.w) + " k" + std::to_string(pc.k) + " s" +
               std::to_string(pc.stride) + " p" + std::to_string(pc.pad) + " block " +
               std::to_string(pc.block) + (pc.ceil_mode ? " ceil" : "") +
               (schedules ? "" : " default schedule") + (relu ? " relu" : ""));
  ScopedEnv disable("EMBER_DISABLE_SCHEDULES", schedules ? "0" : "1");
  auto out_dim = [&](int64_t in) {
    const int64_t span = in + 2 * pc.pad - pc.k;
    int64_t o = (pc.ceil_mode ? (span + pc.stride - 1) / pc.stride : span / pc.stride) + 1;
    if (pc.ceil_mode && (o - 1) * pc.stride >= in + pc.pad) --o;
    return o;
  };
  const int64_t oh = out_dim(pc.h), ow = out_dim(pc.w);
  const std::vector<int64_t> xshape{pc.n, pc.c, pc.h, pc.w}, oshape{pc.n, pc.c, oh, ow};
  KernelGraph kg;
  int x = kg.Input("x", BlockedShape(xshape, pc.block));
  int y = kg.Add("MaxPool", {x}, {TensorType{BlockedShape(oshape, pc.block), kFloat32}},
                 {{"kernel_shape", std::vector<int64_t>{pc.k, pc.k}},
                  {"strides", std::vector<int64_t>{pc.stride, pc.stride}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"pads", std::vector<int64_t>{pc.pad, pc.pad, pc.pad, pc.pad}},
                  {"ceil_mode", int64_t{pc.ceil_mode}},
                  {kDataLayoutAttr, LayoutName(pc.block)}})[0];
  if (relu) y = kg.Add("Relu", {y}, {TensorType{BlockedShape(oshape, pc.block), kFloat32}})[0];
  std::string loops;
  std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
  if (schedules) {
    EXPECT_NE(loops.find("acc[0] = max("), std::string::npos) << "the pool schedule did not run";
  }
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx(xshape, kFloat32), bx(BlockedShape(xshape, pc.block), kFloat32),
      out(BlockedShape(oshape, pc.block), kFloat32);
  hx.FillRandom(31);
  ToBlocked(hx, pc.block, &bx);
  ASSERT_EQ(Call(f, {&bx, &out}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t n = 0; n < pc.n; ++n)
    for (int64_t c = 0; c < pc.c; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          float want = -std::numeric_limits<float>::infinity();
          for (int64_t kh = 0; kh < pc.k; ++kh)
            for (int64_t kw = 0; kw < pc.k; ++kw) {
              const int64_t ih = i * pc.stride + kh - pc.pad, iw = j * pc.stride + kw - pc.pad;
              if (ih < 0 || ih >= pc.h || iw < 0 || iw >= pc.w) continue;
              want = std::max(want, hx.data<float>()[((n * pc.c + c) * pc.h + ih) * pc.w + iw]);
            }
          if (relu) want = std::max(want, 0.0f);
          const int64_t b = pc.block;
          const float got =
              out.data<float>()[(((n * (pc.c / b) + c / b) * oh + i) * ow + j) * b + c % b];
          if (got != want && ++bad <= 5) {
            ADD_FAILURE() << "out[" << n << "," << c << "," << i << "," << j << "] = " << got
                          << ", expected " << want;
          }
        }
  EXPECT_EQ(bad, 0);
}

TEST(BlockedLayout, MaxPoolKernelMatchesTheReference) {
  const std::vector<PoolCase> cases = {
      {1, 32, 9, 9, 3, 2, 1, 16, false},  // ResNet's stem pool
      {2, 16, 8, 7, 2, 2, 0, 16, false},  // batch 2, odd width
      {1, 8, 5, 5, 3, 1, 1, 8, false},    // narrow block, stride 1
      {1, 16, 6, 6, 3, 2, 0, 4, true},    // ceil_mode: the last window hangs over
  };
  for (const PoolCase& c : cases) {
    CheckBlockedMaxPool(c, true);
    CheckBlockedMaxPool(c, false);
  }
  // An elementwise epilogue in the pool's group (a float16 model's casts, an activation).
  CheckBlockedMaxPool(cases[0], true, true);
  CheckBlockedMaxPool(cases[1], true, true);
}

// The blocked global pools (GlobalAveragePool, GlobalMaxPool; with schedules disabled, the
// default schedule) against a direct mean / max over each channel's plane of the NCHW data.
void CheckBlockedGlobalPool(const std::string& op, const std::vector<int64_t>& xshape,
                            int64_t block, bool schedules, bool relu) {
  SCOPED_TRACE(op + " c" + std::to_string(xshape[1]) + " " + std::to_string(xshape[2]) + "x" +
               std::to_string(xshape[3]) + " block " + std::to_string(block) +
               (schedules ? "" : " default schedule") + (relu ? " relu" : ""));
  ScopedEnv disable("EMBER_DISABLE_SCHEDULES", schedules ? "0" : "1");
  const bool is_max = op == "GlobalMaxPool";
  const std::vector<int64_t> oshape{xshape[0], xshape[1], 1, 1};
  const TensorType ot{BlockedShape(oshape, block), kFloat32};
  KernelGraph kg;
  int x = kg.Input("x", BlockedShape(xshape, block));
  int y = kg.Add(op, {x}, {ot}, {{kDataLayoutAttr, LayoutName(block)}})[0];
  if (relu) y = kg.Add("Relu", {y}, {ot})[0];
  std::string loops;
  std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
  if (schedules) {
    EXPECT_NE(loops.find(is_max ? "acc[0] = max(" : "acc[0] = (<buffer load> +"), std::string::npos)
        << "the blocked global pool schedule did not run:\n"
        << loops;
  }
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx(xshape, kFloat32), bx(BlockedShape(xshape, block), kFloat32),
      out(BlockedShape(oshape, block), kFloat32);
  hx.FillRandom(37);
  ToBlocked(hx, block, &bx);
  ASSERT_EQ(Call(f, {&bx, &out}), 0) << TVMGetLastError();
  const int64_t pixels = xshape[2] * xshape[3];
  for (int64_t n = 0; n < xshape[0]; ++n) {
    for (int64_t c = 0; c < xshape[1]; ++c) {
      const float* plane = hx.data<float>() + (n * xshape[1] + c) * pixels;
      double want = is_max ? -std::numeric_limits<double>::infinity() : 0;
      for (int64_t i = 0; i < pixels; ++i)
        want = is_max ? std::max<double>(want, plane[i]) : want + plane[i];
      if (!is_max) want /= static_cast<double>(pixels);
      if (relu) want = std::max(want, 0.0);
      const float got =
          out.data<float>()[(n * (xshape[1] / block) + c / block) * block + c % block];
      EXPECT_NEAR(got, want, 1e-5) << "out[" << n << "," << c << "]";
    }
  }
}

TEST(BlockedLayout, GlobalPoolKernelMatchesTheReference) {
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (bool schedules : {true, false}) {
      CheckBlockedGlobalPool(op, {1, 64, 7, 7}, 16, schedules, false);  // ResNet's last plane
      CheckBlockedGlobalPool(op, {2, 24, 5, 3}, 8, schedules, false);   // batch 2, narrow block
    }
    CheckBlockedGlobalPool(op, {1, 32, 4, 4}, 16, true, true);  // an epilogue in the group
  }
}

// ---- the pass ----

// A k x k stride-1 ungrouped conv's attributes, `pad` on every side.
AttrMap ConvAttrs(int64_t k, int64_t pad) {
  return {{"kernel_shape", std::vector<int64_t>{k, k}},
          {"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
          {"group", int64_t{1}}};
}

// Input x [1, 16, 8, 8] and a k x k stride-1 conv of it to `oc` channels, same-padded, with a
// constant weight w: the conv's output, [1, oc, 8, 8].
int ConvOfInput(KernelGraph* kg, int64_t oc, int64_t k) {
  int x = kg->Input("x", {1, 16, 8, 8});
  int w = kg->graph.AddConstant("w",
                                std::make_shared<HostTensor>(TensorType{{oc, 16, k, k}, kFloat32}));
  return kg->Add("Conv", {x, w}, {TensorType{{1, oc, 8, 8}, kFloat32}}, ConvAttrs(k, k / 2))[0];
}

// x -> Conv(16->32) -> Relu -> Conv(32->32) -> Add(relu) -> MaxPool -> y, on a host target.
struct Chain {
  KernelGraph kg;
  int y = -1;
  Chain() {
    const TensorType t{{1, 32, 8, 8}, kFloat32};
    int x = kg.Input("x", {1, 16, 8, 8});
    const AttrMap conv = ConvAttrs(3, 1);
    int w1 = kg.graph.AddConstant(
        "w1", std::make_shared<HostTensor>(TensorType{{32, 16, 3, 3}, kFloat32}));
    int w2 = kg.graph.AddConstant(
        "w2", std::make_shared<HostTensor>(TensorType{{32, 32, 3, 3}, kFloat32}));
    int a = kg.Add("Conv", {x, w1}, {t}, conv)[0];
    int r = kg.Add("Relu", {a}, {t})[0];
    int b = kg.Add("Conv", {r, w2}, {t}, conv)[0];
    int s = kg.Add("Add", {b, r}, {t})[0];
    y = kg.Add("MaxPool", {s}, {TensorType{{1, 32, 4, 4}, kFloat32}},
               {{"kernel_shape", std::vector<int64_t>{2, 2}},
                {"strides", std::vector<int64_t>{2, 2}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{0, 0, 0, 0}}})[0];
    kg.graph.outputs().push_back(y);
  }
};

std::vector<const Node*> NodesOf(const Graph& g, const std::string& op) {
  std::vector<const Node*> out;
  for (const Node& n : g.nodes()) {
    if (n.op == op) out.push_back(&n);
  }
  return out;
}

TEST(BlockedLayout, PassBlocksTheConvChainWithTransformsAtItsEdges) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx512");
  Chain c;
  AlterConvLayout(&c.kg.graph, StrategyFor(Target::Host()));
  const Graph& g = c.kg.graph;
  std::vector<const Node*> convs = NodesOf(g, "Conv"), transforms = NodesOf(g, "LayoutTransform");
  ASSERT_EQ(convs.size(), 2u);
  for (const Node* n : convs) {
    EXPECT_EQ(n->GetString(kDataLayoutAttr), "NCHW16c");
    EXPECT_EQ(n->GetString(kOutLayoutAttr), "NCHW16c");
    EXPECT_EQ(g.value(n->outputs[0]).type.shape, (std::vector<int64_t>{1, 2, 8, 8, 16}));
  }
  // Relu, Add and MaxPool run blocked; the graph input is blocked once and the MaxPool's result
  // unblocked once for the graph output; no conv output is unblocked at all.
  ASSERT_EQ(transforms.size(), 2u);
  EXPECT_EQ(transforms[0]->GetString(kDstLayoutAttr), "NCHW16c");
  EXPECT_EQ(transforms[1]->GetString(kDstLayoutAttr), "NCHW");
  EXPECT_EQ(g.value(NodesOf(g, "Add")[0]->outputs[0]).type.ndim(), 5);
  EXPECT_EQ(g.value(NodesOf(g, "Relu")[0]->outputs[0]).type.ndim(), 5);
  EXPECT_EQ(g.value(NodesOf(g, "MaxPool")[0]->outputs[0]).type.ndim(), 5);
  // Users see the same output: its value, name and NCHW shape are unchanged.
  EXPECT_EQ(g.outputs(), std::vector<int>{c.y});
  EXPECT_EQ(g.value(c.y).type.shape, (std::vector<int64_t>{1, 32, 4, 4}));
}

// x -> Conv -> GlobalAveragePool -> Flatten-like Reshape -> y: the pool runs in the conv's block,
// so the one transform back to NCHW is of its [1, 32, 1, 1] result, not of the conv's plane.
TEST(BlockedLayout, PassRunsAGlobalPoolInItsInputsBlock) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx512");
  KernelGraph kg;
  int c = ConvOfInput(&kg, 32, 3);
  int y = kg.Add("GlobalAveragePool", {c}, {TensorType{{1, 32, 1, 1}, kFloat32}})[0];
  kg.graph.outputs().push_back(y);
  AlterConvLayout(&kg.graph, StrategyFor(Target::Host()));
  const Graph& g = kg.graph;
  const std::vector<const Node*> pools = NodesOf(g, "GlobalAveragePool");
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]->GetString(kDataLayoutAttr), "NCHW16c");
  EXPECT_EQ(g.value(pools[0]->outputs[0]).type.shape, (std::vector<int64_t>{1, 2, 1, 1, 16}));
  const std::vector<const Node*> transforms = NodesOf(g, "LayoutTransform");
  ASSERT_EQ(transforms.size(), 2u);  // the input in, the pooled channels out
  EXPECT_EQ(g.value(transforms[1]->inputs[0]).type.shape, (std::vector<int64_t>{1, 2, 1, 1, 16}));
  EXPECT_EQ(g.outputs(), std::vector<int>{y});
}

// x -> Conv -> Mul [32,1,1] -> Mul [1,32,1,1] (computed) -> Resize x2 -> Concat(itself) -> y.
TEST(BlockedLayout, PassKeepsPerChannelOpsResizeAndConcatBlocked) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx512");
  KernelGraph kg;
  const TensorType t{{1, 32, 8, 8}, kFloat32}, up{{1, 32, 16, 16}, kFloat32};
  int a = ConvOfInput(&kg, 32, 1);
  int s = kg.Input("s", {1, 32, 1, 1});
  int c = kg.graph.AddConstant("c", std::make_shared<HostTensor>(TensorType{{32, 1, 1}, kFloat32}));
  int m = kg.Add("Mul", {a, c}, {t})[0];
  int e = kg.Add("Mul", {s, m}, {t})[0];
  int r = kg.Add("Resize", {e}, {up},
                 {{"scales", std::vector<double>{1, 1, 2, 2}},
                  {"__out_shape", up.shape},
                  {"mode", std::string("nearest")},
                  {"coordinate_transformation_mode", std::string("asymmetric")},
                  {"nearest_mode", std::string("floor")}})[0];
  int y =
      kg.Add("Concat", {r, r}, {TensorType{{1, 64, 16, 16}, kFloat32}}, {{"axis", int64_t{1}}})[0];
  kg.graph.outputs().push_back(y);
  AlterConvLayout(&kg.graph, StrategyFor(Target::Host()));
  const Graph& g = kg.graph;
  for (const char* op : {"Mul", "Resize", "Concat"}) {
    for (const Node* n : NodesOf(g, op)) {
      EXPECT_EQ(g.value(n->outputs[0]).type.ndim(), 5) << op;
    }
  }
  // The constant is re-shaped at compile time; x, the computed scale and the output transform.
  EXPECT_EQ(g.value(NodesOf(g, "Mul")[0]->inputs[1]).type.shape,
            (std::vector<int64_t>{1, 2, 1, 1, 16}));
  EXPECT_EQ(NodesOf(g, "LayoutTransform").size(), 3u);
  EXPECT_EQ(g.value(NodesOf(g, "Resize")[0]->outputs[0]).type.shape,
            (std::vector<int64_t>{1, 2, 16, 16, 16}));
}

// x -> Conv (4 phases x 16 channels) -> PhaseInterleave (stride 2) -> y: the interleave reads
// and writes NCHW16c, each phase's 16 channels being one block.
TEST(BlockedLayout, PassRunsAPhaseInterleaveInItsConvsBlock) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx512");
  KernelGraph kg;
  int c = ConvOfInput(&kg, 64, 1);
  int y = kg.Add("PhaseInterleave", {c}, {TensorType{{1, 16, 15, 16}, kFloat32}},
                 {{"strides", std::vector<int64_t>{2, 2}},
                  {"crop", std::vector<int64_t>{1, 0}},
                  {"out_size", std::vector<int64_t>{15, 16}},
                  {"group", int64_t{1}}})[0];
  kg.graph.outputs().push_back(y);
  AlterConvLayout(&kg.graph, StrategyFor(Target::Host()));
  const Graph& g = kg.graph;
  const Node* il = NodesOf(g, "PhaseInterleave").at(0);
  EXPECT_EQ(il->GetString(kDataLayoutAttr), "NCHW16c");
  EXPECT_EQ(g.value(il->outputs[0]).type.shape, (std::vector<int64_t>{1, 1, 15, 16, 16}));
  // The input blocked once, the output unblocked once; nothing between conv and interleave.
  EXPECT_EQ(NodesOf(g, "LayoutTransform").size(), 2u);
  EXPECT_EQ(il->inputs[0], NodesOf(g, "Conv").at(0)->outputs[0]);
}

TEST(BlockedLayout, PassLeavesConvsItCannotBlockInNchw) {
  {
    ScopedEnv disable("EMBER_DISABLE_SCHEDULES", "1");
    Chain c;
    AlterConvLayout(&c.kg.graph, StrategyFor(Target::Host()));
    EXPECT_TRUE(NodesOf(c.kg.graph, "LayoutTransform").empty());
  }
  {
    ScopedEnv keep("EMBER_KEEP_NCHW", "1");
    Chain c;
    AlterConvLayout(&c.kg.graph, StrategyFor(Target::Host()));
    EXPECT_TRUE(NodesOf(c.kg.graph, "LayoutTransform").empty());
  }
  {
    // A target without a channels-in-lanes kernel (forced wide kernel) keeps NCHW.
    ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_wide_avx512");
    Chain c;
    AlterConvLayout(&c.kg.graph, StrategyFor(Target::Host()));
    EXPECT_TRUE(NodesOf(c.kg.graph, "LayoutTransform").empty());
  }
}

// A quantized conv's epilogue: x -> Conv -> Cast(int32) -> Cast(float) -> Mul(run-time scalar)
// -> Add(per-channel constant [C,1,1]) -> Mul(per-channel [1,C,1,1]) -> y. Every step runs in the
// conv's block (one transform in, one out); the per-channel constants are reshaped, not moved.
TEST(BlockedLayout, PassBlocksCastsScalarsAndPerChannelConstants) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx512");
  KernelGraph kg;
  const TensorType t{{1, 32, 8, 8}, kFloat32}, ti{{1, 32, 8, 8}, kInt32};
  int conv = ConvOfInput(&kg, 32, 1);
  int scale = kg.Input("scale", {1});
  auto per_channel = [&](const char* name, std::vector<int64_t> shape) {
    auto c = std::make_shared<HostTensor>(TensorType{std::move(shape), kFloat32});
    for (int64_t i = 0; i < 32; ++i) c->Data<float>()[i] = static_cast<float>(i);
    return kg.graph.AddConstant(name, c);
  };
  int i32 =
      kg.Add("Cast", {conv}, {ti}, {{"to", int64_t{6}}, {"__dtype", std::string("int32")}})[0];
  int f32 =
      kg.Add("Cast", {i32}, {t}, {{"to", int64_t{1}}, {"__dtype", std::string("float32")}})[0];
  int scaled = kg.Add("Mul", {f32, scale}, {t})[0];
  int biased = kg.Add("Add", {scaled, per_channel("bias", {32, 1, 1})}, {t})[0];
  int y = kg.Add("Mul", {biased, per_channel("gain", {1, 32, 1, 1})}, {t})[0];
  kg.graph.outputs().push_back(y);
  AlterConvLayout(&kg.graph, StrategyFor(Target::Host()));
  const Graph& g = kg.graph;
  ASSERT_EQ(NodesOf(g, "LayoutTransform").size(), 2u);
  for (const char* op : {"Cast", "Mul", "Add"}) {
    for (const Node* n : NodesOf(g, op)) {
      EXPECT_EQ(g.value(n->outputs[0]).type.ndim(), 5) << n->name;
    }
  }
  const Value& bias = g.value(NodesOf(g, "Add")[0]->inputs[1]);
  ASSERT_TRUE(bias.is_constant());
  EXPECT_EQ(bias.type.shape, (std::vector<int64_t>{1, 2, 1, 1, 16}));
  EXPECT_EQ(bias.constant->Data<float>()[17], 17.0f);
}

// x -> depthwise Conv(k x k, 32 channels, same padding) -> y.
struct DepthwiseConv {
  KernelGraph kg;
  explicit DepthwiseConv(int64_t k) {
    const TensorType t{{1, 32, 12, 12}, kFloat32};
    int x = kg.Input("x", {1, 32, 12, 12});
    int w = kg.graph.AddConstant("w",
                                 std::make_shared<HostTensor>(TensorType{{32, 1, k, k}, kFloat32}));
    const int64_t pad = k / 2;
    int y = kg.Add("Conv", {x, w}, {t},
                   {{"kernel_shape", std::vector<int64_t>{k, k}},
                    {"strides", std::vector<int64_t>{1, 1}},
                    {"dilations", std::vector<int64_t>{1, 1}},
                    {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                    {"group", int64_t{32}}})[0];
    kg.graph.outputs().push_back(y);
  }
};

// The blocked depthwise kernel keeps a weight vector per tap in a register, or, where that leaves
// too few for a tile (5x5 and 7x7 on AVX2's or armv7's 16 registers), one tap row's, so these
// convs are blocked too (they stayed in NCHW, 2-3x slower, with layout transforms around them).
TEST(BlockedLayout, PassBlocksDepthwiseConvsWhoseTapsLeaveATile) {
  struct Case {
    const char* target;
    int64_t k;
    const char* layout;  // "" = left in NCHW
  };
  for (const Case& c :
       {Case{"llvm -mcpu=haswell", 3, "NCHW8c"}, Case{"llvm -mcpu=haswell", 5, "NCHW8c"},
        Case{"llvm -mcpu=haswell", 7, "NCHW8c"},
        Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon", 3, "NCHW4c"},
        Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon", 5, "NCHW4c"},
        Case{"llvm -mtriple=aarch64-linux-gnu", 5, "NCHW4c"},
        Case{"llvm -mtriple=aarch64-linux-gnu", 7, "NCHW4c"},
        Case{"llvm -mcpu=skylake-avx512", 5, "NCHW16c"}}) {
    SCOPED_TRACE(std::string(c.target) + ", " + std::to_string(c.k) + "x" + std::to_string(c.k));
    DepthwiseConv d(c.k);
    AlterConvLayout(&d.kg.graph, StrategyFor(Target::Parse(c.target)));
    const Node* conv = NodesOf(d.kg.graph, "Conv").at(0);
    EXPECT_EQ(conv->GetString(kOutLayoutAttr, ""), c.layout);
    EXPECT_EQ(NodesOf(d.kg.graph, "LayoutTransform").empty(), c.layout[0] == '\0');
  }
}

// x -> Conv(3x3, dilation d, pad d: the plane kept) -> y, dense or depthwise.
struct DilatedConv {
  KernelGraph kg;
  DilatedConv(int64_t d, int64_t group) {
    const TensorType t{{1, 32, 16, 16}, kFloat32};
    int x = kg.Input("x", t.shape);
    int w = kg.graph.AddConstant(
        "w", std::make_shared<HostTensor>(TensorType{{32, 32 / group, 3, 3}, kFloat32}));
    int y = kg.Add("Conv", {x, w}, {t},
                   {{"kernel_shape", std::vector<int64_t>{3, 3}},
                    {"strides", std::vector<int64_t>{1, 1}},
                    {"dilations", std::vector<int64_t>{d, d}},
                    {"pads", std::vector<int64_t>{d, d, d, d}},
                    {"group", group}})[0];
    kg.graph.outputs().push_back(y);
  }
};

// Dilated convs run blocked on the channels-in-lanes kernel (never Winograd, whose transform
// assumes adjacent taps) and depthwise ones on the blocked depthwise kernel, dilation 8 included
// (16 border rows of 16, in two runs that each skip one tap row).
TEST(BlockedLayout, PassBlocksDilatedConvsForTheirKernels) {
  const Target avx512 = Target::Parse("llvm -mcpu=skylake-avx512");
  schedule::TableStrategy strategy = StrategyFor(avx512);
  struct Case {
    int64_t dilation, group;
    const char* layout;  // "" = left in NCHW
    const char* kernel;
  };
  for (const Case& c : {Case{2, 1, "NCHW16c", "conv2d_nchw_ocvec_avx512"},
                        Case{8, 1, "NCHW16c", "conv2d_nchw_ocvec_avx512"},
                        Case{2, 32, "NCHW16c", "depthwise_conv2d_avx512"},
                        Case{4, 32, "NCHW16c", "depthwise_conv2d_avx512"},
                        Case{8, 32, "NCHW16c", "depthwise_conv2d_avx512"}}) {
    SCOPED_TRACE("dilation " + std::to_string(c.dilation) + " group " + std::to_string(c.group));
    DilatedConv d(c.dilation, c.group);
    AlterConvLayout(&d.kg.graph, strategy);
    const Node* conv = NodesOf(d.kg.graph, "Conv").at(0);
    EXPECT_EQ(conv->GetString(kOutLayoutAttr, ""), c.layout);
    const KernelPlan plan = strategy.Choose(d.kg.graph, *conv);
    EXPECT_EQ(plan.kernel, c.kernel);
    EXPECT_EQ(plan.winograd_tile, 0);
  }
}

TEST(BlockedLayout, ShapeRulesNameTheNodeAndTheLayout) {
  KernelGraph kg;
  int x = kg.Input("x", {1, 12, 4, 4});
  Node t{"LayoutTransform",
         "to_blocked",
         {{kSrcLayoutAttr, std::string("NCHW")}, {kDstLayoutAttr, std::string("NCHW8c")}},
         {x},
         {}};
  const OpDef* def = OpRegistry::Global()->Find("LayoutTransform");
  ASSERT_NE(def, nullptr);
  try {
    def->infer_type()(t, {kg.graph.value(x).type});
    FAIL() << "12 channels cannot fill blocks of 8";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("to_blocked"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NCHW8c"), std::string::npos) << e.what();
  }
  t.attrs[kDstLayoutAttr] = std::string("NCHWxc");
  EXPECT_THROW(def->infer_type()(t, {kg.graph.value(x).type}), CompileError);
  EXPECT_EQ(LayoutBlock("NCHW16c"), 16);
  EXPECT_EQ(LayoutBlock("NCHW"), 0);
  EXPECT_EQ(LayoutBlock("NHWC"), -1);
  EXPECT_EQ(LayoutBlock("NCHW0c"), -1);
}

// Steps 2-4 of the Winograd kernel run band by band when a whole image's V and M (alpha^2 x
// channels in and out x tiles floats) exceed half the last-level cache: workspaces stay bounded
// for large images.
TEST(BlockedLayout, WinogradRunsLargePlanesInBands) {
  const BlockedCase c{1, 32, 88, 88, 32, 3, 1, 1, 1, true, true, true, 16, 16};
  const int64_t tiles = 22 * 22, vm_bytes = 36 * (32 + 32) * tiles * 4;  // F(4x4): 4.5 MB
  const Target host = Target::Host();
  const bool banded = vm_bytes > schedule::WinogradBandBytes(&host);
  CheckBlockedConv("conv2d_nchw_ocvec_avx512", banded ? "for band in [0, " : "win0[", {32, 0, 4},
                   c);
}

// A Conv whose Winograd attributes do not match its weights is refused by name when lowered.
TEST(BlockedLayout, MalformedWinogradWeightsNameTheNode) {
  ScopedEnv disable("EMBER_DISABLE_SCHEDULES", "1");
  KernelGraph kg;
  int x = kg.Input("x", {1, 1, 6, 6, 16});
  int w = kg.Input("w", {16, 16, 6, 6});
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"strides", std::vector<int64_t>{1, 1}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                {"group", int64_t{1}},
                {kDataLayoutAttr, std::string("NCHW16c")},
                {kOutLayoutAttr, std::string("NCHW16c")},
                {kWinogradTileAttr, int64_t{3}},
                {kWinogradBlockAttr, int64_t{16}}};
  int y = kg.Add("Conv", {x, w}, {TensorType{{1, 1, 6, 6, 16}, kFloat32}}, attrs)[0];
  lower::ScheduleOptions opts;
  try {
    lower::LowerGroup(kg.Group("conv", {y}), opts);
    FAIL() << "tile 3 has no transform";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Conv_0"), std::string::npos) << what;
    EXPECT_NE(what.find("got tile 3"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ember::compiler
