// Tuning (compiler/schedule/tuning.h, compiler/autotune/): the log's format (golden text, round
// trip, malformed lines), cache sizes, the schedule hook (a log forcing a non-default candidate
// changes the kernel and keeps it correct; every candidate is correct), and `--tune` end to end.
#include <ember/compiler/driver.h>
#include <ember/compiler/ir/tensor_type.h>
#include <ember/compiler/lower.h>
#include <ember/runtime/c_runtime_api.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../../compiler/schedule/conv_group.h"
#include "../../../compiler/schedule/tuning.h"
#include "kernel_test_util.h"
#include "onnx_builder.h"

namespace ember::compiler {
namespace {

using testing::ReadFile;
using testing::ScopedEnv;

namespace fs = std::filesystem;
using autotune::ParamSet;
using autotune::TuningLog;
using autotune::TuningRecord;
using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;

// The wide conv schedule with the AVX2 table entry (16 lanes x 4 channels), on any host.
constexpr const char* kSchedule = "conv2d_nchw_wide_avx2";

std::string TempDir(const char* tag) {
  std::string t =
      (fs::temp_directory_path() / (std::string("ember_tuning_") + tag + "_XXXXXX")).string();
  std::vector<char> buf(t.begin(), t.end());
  buf.push_back('\0');
  return mkdtemp(buf.data());
}

// Removes a test's directory however the test ends.
struct RemoveAtExit {
  std::string path;
  ~RemoveAtExit() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string ErrorOf(const std::string& text) {
  try {
    TuningLog::Parse(text, "my.log");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// ---- the log ----

constexpr const char* kGolden =
    "# ember tuning log v1: KEY<TAB>PARAMS<TAB>TIME_MS<TAB>VERSION\n"
    "conv2d_nchw_wide f32 n1 c8 target=t:c:v256\tlanes=8,oc_block=2\t0.1250\t0.1.0\n"
    "zeta workload\tb=-3,a=7\t12.0000\t0.2.0\n";

TEST(TuningLog, GoldenTextRoundTrips) {
  TuningLog log = TuningLog::Parse(kGolden, "golden.log");
  ASSERT_EQ(log.size(), 2u);
  const TuningRecord* r = log.Find("conv2d_nchw_wide f32 n1 c8 target=t:c:v256");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->params, (ParamSet{{"lanes", 8}, {"oc_block", 2}}));
  EXPECT_DOUBLE_EQ(r->time_ms, 0.125);
  EXPECT_EQ(r->version, "0.1.0");
  EXPECT_EQ(log.Find("zeta workload")->params, (ParamSet{{"a", 7}, {"b", -3}}));
  EXPECT_EQ(log.Find("absent"), nullptr);
  // Params are written in name order; otherwise the text is what was read.
  std::string expected = kGolden;
  expected.replace(expected.find("b=-3,a=7"), 8, "a=7,b=-3");
  EXPECT_EQ(log.ToText(), expected);
  EXPECT_EQ(TuningLog::Parse(log.ToText(), "again").ToText(), expected);
}

TEST(TuningLog, SaveLoadMergeAndComments) {
  std::string dir = TempDir("log");
  RemoveAtExit cleanup{dir};
  std::string path = dir + "/sub/tuning.log";
  TuningLog a = TuningLog::LoadIfExists(path);
  EXPECT_EQ(a.size(), 0u);
  a.Put(TuningRecord{"k1", {{"x", 1}}, 1.5, "v"});
  a.Put(TuningRecord{"k2", {{"x", 2}}, 2.5, "v"});
  a.Save(path);  // creates sub/
  TuningLog b;
  b.Put(TuningRecord{"k2", {{"x", 3}}, 0.5, "w"});
  b.Put(TuningRecord{"k3", {{"y", 4}}, 0.25, "w"});
  TuningLog c = TuningLog::Load(path);
  EXPECT_EQ(c.path(), path);
  c.Merge(b);
  c.Save(path);
  TuningLog d = TuningLog::Load(path);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.Find("k1")->params.at("x"), 1);
  EXPECT_EQ(d.Find("k2")->params.at("x"), 3);  // the merged-in record wins
  EXPECT_EQ(d.Find("k2")->version, "w");
  EXPECT_EQ(d.Find("k3")->params.at("y"), 4);
  // Comments, blank lines, CRLF; a repeated key: the later line wins.
  TuningLog e = TuningLog::Parse("# hi\n\nk\tx=1\t1\tv\r\nk\tx=2\t1\tv\n", "e");
  EXPECT_EQ(e.Find("k")->params.at("x"), 2);
}

TEST(TuningLog, MalformedLinesNameFileAndLine) {
  EXPECT_NE(
      ErrorOf("# c\nk\tx=1\t1\n").find("my.log line 2: expected 4 tab-separated fields, got 3"),
      std::string::npos)
      << ErrorOf("# c\nk\tx=1\t1\n");
  EXPECT_NE(ErrorOf("k\tx=one\t1\tv\n").find("line 1: bad parameter \"x=one\""), std::string::npos);
  EXPECT_NE(ErrorOf("k\tX=1\t1\tv\n").find("bad parameter"), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=99999999999999999999\t1\tv\n").find("bad parameter"), std::string::npos);
  EXPECT_NE(ErrorOf("k\t\t1\tv\n").find("no parameters"), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=1,x=2\t1\tv\n").find("given twice"), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=1\t-2\tv\n").find("time \"-2\""), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=1\tfast\tv\n").find("time \"fast\""), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=1\tnan\tv\n").find("time \"nan\""), std::string::npos);
  EXPECT_NE(ErrorOf("\tx=1\t1\tv\n").find("empty key"), std::string::npos);
  EXPECT_NE(ErrorOf("k\tx=1\t1\t\n").find("empty version"), std::string::npos);
  EXPECT_NE(ErrorOf("ok\tx=1\t1\tv\nk\tx=1\t1\tv\textra\n").find("my.log line 2"),
            std::string::npos);
  std::string missing = "/nonexistent/ember/tuning.log";
  try {
    TuningLog::Load(missing);
    ADD_FAILURE() << "no error for a missing log";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

TEST(TuningCache, RowChunkKeepsAChunksInputInHalfOfL2) {
  // AArch64 table: 512 KiB L2, so a chunk's input rows may take 256 KiB.
  Target arm = Target::Parse("llvm -mtriple=aarch64-linux-gnu");
  schedule::ConvShape small{1, 16, 14, 14, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 16, 16};
  // 16 x 16 x 16 floats fit, but the rows still come in at least kMinRowChunks (4) chunks, so
  // each thread of a launch gets a band of rows: 2, the largest divisor of 14 up to 14 / 4.
  EXPECT_EQ(schedule::CacheRowChunk(small, arm), 2);
  // 64 channels of 58 padded columns: 14.5 KiB per input row, 2 halo rows; 256 KiB holds
  // 15 rows besides the halo; 56 / 4 = 14 bounds it first (a divisor of 56).
  schedule::ConvShape big{1, 64, 56, 56, 64, 56, 56, 3, 3, 1, 1, 1, 1, 1, 64, 64};
  EXPECT_EQ(schedule::CacheRowChunk(big, arm), 14);
  // 128 channels: 29 KiB per input row and 58 KiB of halo leave room for 6 rows, so 4 (the
  // largest divisor of 56 up to 6).
  schedule::ConvShape wide{1, 128, 56, 56, 128, 56, 56, 3, 3, 1, 1, 1, 1, 1, 128, 128};
  EXPECT_EQ(schedule::CacheRowChunk(wide, arm), 4);
}

TEST(TuningCache, IcChunkTakesWholeInputBlocks) {
  // A 1x1 conv from 144 channels (NCHW16c) to 32: 128 bytes of weights per input channel, 16 KiB
  // hold 128 channels; the largest divisor of 144 up to 128 is 72, four and a half blocks, so
  // 48 (three blocks).
  schedule::ConvShape blocked{1, 144, 28, 28, 32, 28, 28, 1, 1, 1, 1, 0, 0, 1, 144, 32, 16, 16};
  EXPECT_EQ(schedule::CacheIcChunk(blocked, 32, 16 * 1024), 48);
  // The same conv on NCHW input: any divisor.
  schedule::ConvShape nchw = blocked;
  nchw.in_block = 0;
  EXPECT_EQ(schedule::CacheIcChunk(nchw, 32, 16 * 1024), 72);
  // A budget below one block still takes one whole block.
  EXPECT_EQ(schedule::CacheIcChunk(blocked, 32, 1024), 16);
}

TEST(TuningCache, SizesFromSysfsTextAndTable) {
  EXPECT_EQ(schedule::ParseCacheSize("48K"), 48 * 1024);
  EXPECT_EQ(schedule::ParseCacheSize("2M"), 2 * 1024 * 1024);
  EXPECT_EQ(schedule::ParseCacheSize("512"), 512);
  EXPECT_EQ(schedule::ParseCacheSize("K"), -1);
  EXPECT_EQ(schedule::ParseCacheSize("12Q"), -1);
  EXPECT_EQ(schedule::ParseCacheSize(""), -1);
  schedule::CacheSizes host = schedule::HostCacheSizes();
  EXPECT_GE(host.l1d, 4096);
  EXPECT_GE(host.l2, host.l1d);
  schedule::CacheSizes arm =
      schedule::TargetCacheSizes(Target::Parse("llvm -mtriple=aarch64-linux-gnu"));
  EXPECT_EQ(arm.l1d, 64 * 1024);
  EXPECT_EQ(arm.l2, 512 * 1024);
}

// ---- the hook in a schedule ----

// A k x k conv (stride 1, same padding) + Relu on a 10 x 9 plane.
struct ConvKernel {
  KernelGraph kg;
  int y = -1;
  int64_t k = 3;
  static constexpr int64_t kC = 8, kH = 10, kW = 9, kOC = 8;
  explicit ConvKernel(int64_t kernel = 3) : k(kernel) {
    const int64_t pad = k / 2;
    int x = kg.Input("x", {1, kC, kH, kW});
    int w = kg.Input("w", {kOC, kC, k, k});
    int b = kg.Input("b", {kOC});
    AttrMap attrs{{"kernel_shape", std::vector<int64_t>{k, k}},
                  {"strides", std::vector<int64_t>{1, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                  {"group", int64_t{1}}};
    TensorType ot{{1, kOC, kH, kW}, kFloat32};
    int c = kg.Add("Conv", {x, w, b}, {ot}, attrs)[0];
    y = kg.Add("Relu", {c}, {ot})[0];
  }
  FusedGroup Group() const { return kg.Group("conv_relu", {y}); }
};

// Builds the conv with `log`, runs it, compares with a reference; returns the loop IR text.
std::string BuildAndCheck(const ConvKernel& ck, const TuningLog* log) {
  using CK = ConvKernel;
  std::string dump = TempDir("dump");
  BuildOptions bo;
  bo.dump_dir = dump;
  bo.tuning_log = log;
  Library lib({ck.Group()}, bo);
  std::string loops = ReadFile(dump + "/kernels.loop.txt");
  fs::remove_all(dump);
  auto f = lib.Get("conv_relu");
  if (f == nullptr) {
    ADD_FAILURE() << "no kernel";
    return loops;
  }
  const int64_t k = ck.k, pad = k / 2;
  HostArray x({1, CK::kC, CK::kH, CK::kW}, kFloat32), w({CK::kOC, CK::kC, k, k}, kFloat32),
      b({CK::kOC}, kFloat32), out({1, CK::kOC, CK::kH, CK::kW}, kFloat32);
  x.FillRandom(1);
  w.FillRandom(2);
  b.FillRandom(3);
  EXPECT_EQ(Call(f, {&x, &w, &b, &out}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t o = 0; o < CK::kOC; ++o)
    for (int64_t i = 0; i < CK::kH; ++i)
      for (int64_t j = 0; j < CK::kW; ++j) {
        double acc = b.data<float>()[o];
        for (int64_t c = 0; c < CK::kC; ++c)
          for (int64_t kh = 0; kh < k; ++kh)
            for (int64_t kw = 0; kw < k; ++kw) {
              int64_t ih = i + kh - pad, iw = j + kw - pad;
              if (ih < 0 || ih >= CK::kH || iw < 0 || iw >= CK::kW) continue;
              acc += double{x.data<float>()[(c * CK::kH + ih) * CK::kW + iw]} *
                     w.data<float>()[((o * CK::kC + c) * k + kh) * k + kw];
            }
        acc = std::max(acc, 0.0);
        float got = out.data<float>()[(o * CK::kH + i) * CK::kW + j];
        if (std::fabs(got - acc) > 1e-4 + 1e-4 * std::fabs(acc) && ++bad <= 3) {
          ADD_FAILURE() << "out[" << o << "," << i << "," << j << "] = " << got << ", expected "
                        << acc;
        }
      }
  EXPECT_EQ(bad, 0);
  return loops;
}

// The workload the schedule describes for the group on the host.
schedule::TuningTask Describe(const ConvKernel& ck) {
  testing::HostTuning tuning;
  lower::LowerGroup(ck.Group(), tuning.Options());
  EXPECT_EQ(tuning.tasks.size(), 1u);
  return tuning.tasks.empty() ? schedule::TuningTask{} : tuning.tasks.back();
}

TEST(TuningHook, ScheduleDescribesItsWorkload) {
  ScopedEnv force("EMBER_SCHEDULE", kSchedule);
  ConvKernel ck;
  schedule::TuningTask t = Describe(ck);
  EXPECT_EQ(t.key.rfind("conv2d_nchw_wide f32 n1 c8 h10 w9 oc8 o10x9 k3x3 s1x1 p1x1 g1 target=", 0),
            0u)
      << t.key;
  EXPECT_EQ(t.defaults, (ParamSet{{"lanes", 16}, {"oc_block", 4}}));  // the AVX2 table entry
  ASSERT_GE(t.candidates.size(), 3u);
  EXPECT_EQ(t.candidates[0], t.defaults);
  for (size_t i = 1; i < t.candidates.size(); ++i) {
    EXPECT_NE(t.candidates[i], t.defaults);
    EXPECT_EQ(ConvKernel::kOC % t.candidates[i].at("oc_block"), 0);
  }
}

TEST(TuningHook, LogForcesANonDefaultBlockThatStaysCorrect) {
  ScopedEnv force("EMBER_SCHEDULE", kSchedule);
  ConvKernel ck;
  std::string key = Describe(ck).key;
  // Without a log: 16 lanes x 4 channels of accumulators.
  std::string plain = BuildAndCheck(ck, nullptr);
  EXPECT_NE(plain.find("acc3_15["), std::string::npos);
  TuningLog log;
  log.Put(TuningRecord{key, {{"lanes", 8}, {"oc_block", 2}}, 1.0, "test"});
  log.Put(TuningRecord{"other workload", {{"lanes", 64}, {"oc_block", 8}}, 1.0, "test"});
  std::string tuned = BuildAndCheck(ck, &log);
  EXPECT_NE(tuned.find("acc1_7["), std::string::npos);
  EXPECT_EQ(tuned.find("acc2_0["), std::string::npos);
  EXPECT_EQ(tuned.find("acc0_8["), std::string::npos);
  EXPECT_EQ(log.used(), (std::set<std::string>{key}));
  // A record with other parameter names (an older schedule) or absurd values is ignored.
  TuningLog stale;
  stale.Put(TuningRecord{key, {{"lanes", 8}, {"tile", 2}}, 1.0, "test"});
  EXPECT_NE(BuildAndCheck(ck, &stale).find("acc3_15["), std::string::npos);
  TuningLog absurd;
  absurd.Put(TuningRecord{key, {{"lanes", 1 << 20}, {"oc_block", 2}}, 1.0, "test"});
  EXPECT_NE(BuildAndCheck(ck, &absurd).find("acc3_15["), std::string::npos);
}

TEST(TuningHook, EveryCandidateIsCorrect) {
  ScopedEnv force("EMBER_SCHEDULE", kSchedule);
  ConvKernel ck;
  schedule::TuningTask t = Describe(ck);
  for (const ParamSet& p : t.candidates) {
    SCOPED_TRACE(autotune::ParamSetToString(p));
    TuningLog log;
    log.Put(TuningRecord{t.key, p, 1.0, "test"});
    std::string loops = BuildAndCheck(ck, &log);
    std::string last_acc = "acc" + std::to_string(p.at("oc_block") - 1) + "_" +
                           std::to_string(p.at("lanes") - 1) + "[";
    EXPECT_NE(loops.find(last_acc), std::string::npos);
  }
}

TEST(TuningHook, OcVecBlockWidthFromTheLog) {
  ConvKernel ck;
  schedule::ConvGroup m;
  ASSERT_TRUE(schedule::MatchConvGroup(ck.Group(), &m));
  const schedule::ConvShape& shape = m.s;
  testing::HostTuning tuning;
  lower::ScheduleOptions so = tuning.Options();
  schedule::OcVecBlocking b = schedule::TunedConv2dOcVecBlocking(shape, so, 2, 8, 6);
  EXPECT_EQ(b.ow_block, 6);
  // A small input fits any L2; the 10 rows still come in at least 4 chunks (CacheRowChunk).
  constexpr int64_t kRowChunk = 2;
  EXPECT_EQ(b.row_chunk, kRowChunk);
  ASSERT_EQ(tuning.tasks.size(), 1u);
  const schedule::TuningTask& t = tuning.tasks[0];
  EXPECT_NE(
      t.key.find("conv2d_nchw_ocvec f32 n1 c8 h10 w9 oc8 o10x9 k3x3 s1x1 p1x1 g1 ocv2 target="),
      std::string::npos)
      << t.key;
  // 8 channels of 3x3x8 weights fit any L1: no chunking of the reduction.
  EXPECT_EQ(t.defaults,
            (ParamSet{{"ow_block", 6}, {"row_chunk", kRowChunk}, {"ic_chunk", ConvKernel::kC}}));
  ASSERT_GE(t.candidates.size(), 2u);
  for (const ParamSet& p : t.candidates) EXPECT_GE(p.at("ow_block"), 1);
  TuningLog log;
  log.Put(TuningRecord{t.key, {{"ow_block", 3}, {"row_chunk", 5}, {"ic_chunk", 2}}, 1.0, "test"});
  so.tuning_tasks = nullptr;
  so.tuning_log = &log;
  b = schedule::TunedConv2dOcVecBlocking(shape, so, 2, 8, 6);
  EXPECT_EQ(b.ow_block, 3);
  EXPECT_EQ(b.row_chunk, 5);
  EXPECT_EQ(b.ic_chunk, 2);
  EXPECT_EQ(schedule::TunedConv2dOcVecBlocking(shape, so, 1, 4, 6).ow_block,
            6);  // another key
  log.Put(
      TuningRecord{t.key, {{"ow_block", 100000}, {"row_chunk", 5}, {"ic_chunk", 2}}, 1.0, "test"});
  EXPECT_EQ(schedule::TunedConv2dOcVecBlocking(shape, so, 2, 8, 6).ow_block, 6);  // absurd
  log.Put(TuningRecord{t.key,
                       {{"ow_block", 4}, {"row_chunk", 3}, {"ic_chunk", 2}},
                       1.0,
                       "test"});  // 3 does not divide 10
  EXPECT_EQ(schedule::TunedConv2dOcVecBlocking(shape, so, 2, 8, 6).row_chunk, kRowChunk);
  log.Put(TuningRecord{t.key,
                       {{"ow_block", 4}, {"row_chunk", 5}, {"ic_chunk", 3}},
                       1.0,
                       "test"});  // 3 does not divide 8
  EXPECT_EQ(schedule::TunedConv2dOcVecBlocking(shape, so, 2, 8, 6).ic_chunk, ConvKernel::kC);
}

// The channels-in-lanes conv with chunked rows (as CacheRowChunk picks on small-L2 targets), a
// reduction chunked over input channels (CacheIcChunk on big weights) and other block widths from
// a log: still the reference's results, on the single-row and the multi-row tile paths.
TEST(TuningHook, OcVecCandidatesAndRowChunksAreCorrect) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_ocvec_avx2");
  ConvKernel ck;
  schedule::TuningTask t = Describe(ck);
  ASSERT_NE(t.key.find("conv2d_nchw_ocvec"), std::string::npos) << t.key;
  std::vector<ParamSet> cands = t.candidates;
  cands.push_back({{"ow_block", 4}, {"row_chunk", 2}, {"ic_chunk", ConvKernel::kC}});
  cands.push_back({{"ow_block", 9}, {"row_chunk", 1}, {"ic_chunk", 2}});
  cands.push_back({{"ow_block", 4}, {"row_chunk", 5}, {"ic_chunk", 1}});
  cands.push_back({{"ow_block", 30}, {"row_chunk", ConvKernel::kH}, {"ic_chunk", 4}});
  for (const ParamSet& p : cands) {
    SCOPED_TRACE(autotune::ParamSetToString(p));
    TuningLog log;
    log.Put(TuningRecord{t.key, p, 1.0, "test"});
    BuildAndCheck(ck, &log);
    EXPECT_EQ(log.used().size(), 1u);
  }
}

// The 1x1 kernel's tile width: described per workload, taken from a log, every candidate right.
TEST(TuningHook, OneByOneTileWidthFromTheLog) {
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_1x1_avx2");
  ConvKernel ck(1);
  schedule::TuningTask t = Describe(ck);
  EXPECT_NE(t.key.find("conv2d_1x1 f32 n1 c8 h10 w9 oc8 o10x9 k1x1 s1x1 p0x0 g1 ocb4 target="),
            std::string::npos)
      << t.key;
  EXPECT_EQ(t.defaults, (ParamSet{{"width", 16}}));  // the AVX2 entry: 2 vectors of 8
  ASSERT_GE(t.candidates.size(), 2u);
  for (const ParamSet& p : t.candidates) {
    SCOPED_TRACE(autotune::ParamSetToString(p));
    TuningLog log;
    log.Put(TuningRecord{t.key, p, 1.0, "test"});
    std::string loops = BuildAndCheck(ck, &log);
    // The last accumulator of channel 0: one per vector of 8 positions.
    std::string last = "accgm0_" + std::to_string(p.at("width") / 8 - 1) + "[";
    EXPECT_NE(loops.find(last), std::string::npos);
    EXPECT_EQ(log.used().size(), 1u);
  }
  TuningLog absurd;
  absurd.Put(TuningRecord{t.key, {{"width", 12}}, 1.0, "test"});  // not a multiple of 8
  EXPECT_NE(BuildAndCheck(ck, &absurd).find("accgm0_1["), std::string::npos);
}

// ---- --tune end to end ----

std::string TinyConvModel() {
  using ember::testing::OnnxBuilder;
  OnnxBuilder b;
  const int64_t C = 4, OC = 8, H = 12, W = 12;
  std::vector<float> w(OC * C * 9), bias(OC);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i);
  b.Input("x", {1, C, H, W}).Output("y", {1, OC, H, W});
  b.FloatInit("w", {OC, C, 3, 3}, w).FloatInit("b", {OC}, bias);
  auto* conv = b.Node("Conv", "conv", {"x", "w", "b"}, {"c"});
  OnnxBuilder::IntsAttr(conv, "kernel_shape", {3, 3});
  OnnxBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  b.Node("Relu", "relu", {"c"}, {"y"});
  return b.Bytes();
}

TEST(TuneEndToEnd, TunesWritesTheLogAndALaterCompileReusesIt) {
  ScopedEnv force("EMBER_SCHEDULE", kSchedule);
  std::string dir = TempDir("e2e");
  RemoveAtExit cleanup{dir};
  std::string model = dir + "/model.onnx";
  std::ofstream(model, std::ios::binary) << TinyConvModel();
  std::string log_path = dir + "/logs/tuning.log";
  CompileOptions opt;
  opt.model_path = model;
  opt.out_dir = dir + "/tuned";
  opt.tune = true;
  opt.tuning_log = log_path;
  opt.tune_candidates = 3;
  opt.tune_repeat = 1;
  std::ostringstream messages;
  opt.log = &messages;
  CompileStats st = Compile(opt);
  EXPECT_EQ(st.tuned_workloads, 1) << messages.str();
  EXPECT_EQ(st.tuning_log_used, 1);
  EXPECT_NE(messages.str().find("emberc: tuned 1 of 1 tunable workloads"), std::string::npos)
      << messages.str();
  TuningLog log = TuningLog::Load(log_path);
  ASSERT_EQ(log.size(), 1u);
  std::string line = ReadFile(log_path);
  EXPECT_NE(line.find("conv2d_nchw_wide f32 n1 c4 h12 w12 oc8"), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("\t") + EMBER_VERSION + "\n"), std::string::npos) << line;
  EXPECT_TRUE(fs::exists(opt.out_dir + "/lib.so"));

  // A second --tune measures nothing new; a plain compile with the log takes the winner.
  st = Compile(opt);
  EXPECT_EQ(st.tuned_workloads, 0);
  CompileOptions reuse;
  reuse.model_path = model;
  reuse.out_dir = dir + "/reused";
  reuse.tuning_log = log_path;
  reuse.verbose = true;
  std::ostringstream verbose;
  reuse.log = &verbose;
  st = Compile(reuse);
  EXPECT_EQ(st.tuning_log_used, 1);
  EXPECT_NE(verbose.str().find(" -> lanes="), std::string::npos) << verbose.str();
}

TEST(TuneEndToEnd, DefaultLogPathFollowsXdgThenHome) {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DefaultTuningLogPath("/out"), "/xdg/ember/tuning.log");
  }
  ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(DefaultTuningLogPath("/out"), "/home/u/.cache/ember/tuning.log");
  }
  ScopedEnv no_home("HOME", nullptr);
  EXPECT_EQ(DefaultTuningLogPath("/out"), "/out/tuning.log");
}

TEST(TuneEndToEnd, RefusesCrossTargetsAndBadLogs) {
  std::string dir = TempDir("refuse");
  RemoveAtExit cleanup{dir};
  std::string model = dir + "/model.onnx";
  std::ofstream(model, std::ios::binary) << TinyConvModel();
  CompileOptions opt;
  opt.model_path = model;
  opt.out_dir = dir + "/out";
  opt.tune = true;
  opt.tuning_log = dir + "/t.log";
  opt.target = "llvm -mtriple=aarch64-linux-gnu";
  try {
    Compile(opt);
    ADD_FAILURE() << "--tune accepted a cross target";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("needs the host target"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/bad.log") << "key\tlanes=8\n";
  opt.tune = false;
  opt.target.clear();
  opt.tuning_log = dir + "/bad.log";
  try {
    Compile(opt);
    ADD_FAILURE() << "a malformed log was accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/bad.log line 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::compiler
