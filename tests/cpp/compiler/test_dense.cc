// Dense product schedule (compiler/schedule/dense.cc): every entry of its table is forced on the
// host (EMBER_SCHEDULE=NAME; the loop nests are portable) and compared with a reference over
// shapes with and without full panels, row and column tails, a GEMV, split row tiles and fused
// epilogues (bias [N] or [1, N], residual Add, Relu); Gemms it must not take fall back.
#include <ember/compiler/transform.h>
#include <ember/runtime/c_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "../../../compiler/schedule/schedule.h"
#include "../../../compiler/schedule/tuning.h"
#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::ScopedEnv;

enum Bias : int { kNoBias = 0, kBiasN = 1, kBias1N = 2 };

struct DenseCase {
  int64_t m, k, n;
  int bias;
  bool residual, relu;
  double alpha = 1.0;
  int64_t packed_width = 0;  // > 0: W handed over in panels, as PackDenseWeights stores it
};

// [K][N] -> [N/width][K][width] panels, then the last N % width columns as [K][N % width].
std::vector<float> PackedPanels(HostArray& w, int64_t width) {
  const int64_t k = w.shape[0], n = w.shape[1], full = n / width * width;
  std::vector<float> out(static_cast<size_t>(k * n));
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const int64_t at = c < full ? ((c / width) * k + r) * width + c % width
                                  : full * k + r * (n - full) + (c - full);
      out[at] = w.data<float>()[r * n + c];
    }
  }
  return out;
}

std::string CaseName(const DenseCase& c) {
  std::ostringstream os;
  os << "m" << c.m << "k" << c.k << "n" << c.n << "b" << c.bias << (c.residual ? "a" : "")
     << (c.relu ? "r" : "") << "alpha" << c.alpha;
  return os.str();
}

std::vector<int64_t> BiasShape(const DenseCase& dc) {
  return dc.bias == kBias1N ? std::vector<int64_t>{1, dc.n} : std::vector<int64_t>{dc.n};
}

// Gemm(A, W[, bias]) [-> Add residual] [-> Relu] as one group.
FusedGroup DenseGraph(const DenseCase& dc, KernelGraph* kg) {
  const std::vector<int64_t> oshape{dc.m, dc.n};
  int a = kg->Input("a", {dc.m, dc.k});
  int w = kg->Input("w", {dc.k, dc.n});
  std::vector<int> ins{a, w};
  if (dc.bias != kNoBias) ins.push_back(kg->Input("b", BiasShape(dc)));
  int r = dc.residual ? kg->Input("r", oshape) : -1;
  AttrMap attrs{{"alpha", dc.alpha}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}};
  if (dc.packed_width > 0) attrs[kPackedDenseWidthAttr] = dc.packed_width;
  int y = kg->Add("Gemm", ins, {TensorType{oshape, kFloat32}}, attrs)[0];
  if (dc.residual) y = kg->Add("Add", {y, r}, {TensorType{oshape, kFloat32}})[0];
  if (dc.relu) y = kg->Add("Relu", {y}, {TensorType{oshape, kFloat32}})[0];
  return kg->Group("dense", {y});
}

// The group built into a library (with `log`, if any); *loops receives its loop IR, so callers
// can tell which kernel took the group.
std::unique_ptr<testing::Library> BuildWithLoops(const FusedGroup& group,
                                                 const autotune::TuningLog* log,
                                                 std::string* loops) {
  char tmpl[] = "/tmp/ember_dense_test_XXXXXX";
  const std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  bo.tuning_log = log;
  auto lib = std::make_unique<testing::Library>(std::vector<FusedGroup>{group}, bo);
  *loops = testing::ReadFile(dump + "/kernels.loop.txt");
  std::filesystem::remove_all(dump);
  return lib;
}

// Builds the case (with `log`, if any), runs it and compares with a reference; returns the loop
// IR so callers can tell which kernel took the group.
std::string CheckDense(const DenseCase& dc, const autotune::TuningLog* log = nullptr) {
  SCOPED_TRACE(CaseName(dc));
  const std::vector<int64_t> oshape{dc.m, dc.n}, bias_shape = BiasShape(dc);
  KernelGraph kg;
  FusedGroup group = DenseGraph(dc, &kg);
  std::string loops;
  const auto lib = BuildWithLoops(group, log, &loops);
  auto f = lib->Get("dense");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return loops;
  HostArray ha({dc.m, dc.k}, kFloat32), hw({dc.k, dc.n}, kFloat32), hb(bias_shape, kFloat32),
      hr(oshape, kFloat32), out(oshape, kFloat32);
  ha.FillRandom(21);
  hw.FillRandom(22);
  hb.FillRandom(23);
  hr.FillRandom(24);
  HostArray hw_call({dc.k, dc.n}, kFloat32);
  std::copy(hw.bytes.begin(), hw.bytes.end(), hw_call.bytes.begin());
  if (dc.packed_width > 0) {
    std::vector<float> packed = PackedPanels(hw, dc.packed_width);
    std::copy(packed.begin(), packed.end(), hw_call.data<float>());
  }
  std::vector<HostArray*> args{&ha, &hw_call};
  if (dc.bias != kNoBias) args.push_back(&hb);
  if (dc.residual) args.push_back(&hr);
  args.push_back(&out);
  EXPECT_EQ(Call(f, args), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t i = 0; i < dc.m; ++i) {
    for (int64_t j = 0; j < dc.n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < dc.k; ++k) {
        acc += double{ha.data<float>()[i * dc.k + k]} * hw.data<float>()[k * dc.n + j];
      }
      acc *= dc.alpha;
      if (dc.bias != kNoBias) acc += hb.data<float>()[j];
      if (dc.residual) acc += hr.data<float>()[i * dc.n + j];
      if (dc.relu) acc = std::max(acc, 0.0);
      const float got = out.data<float>()[i * dc.n + j];
      if (std::fabs(got - acc) > 1e-4 * (1 + std::fabs(acc)) && ++bad <= 5) {
        ADD_FAILURE() << "y[" << i << "][" << j << "] = " << got << ", expected " << acc;
      }
    }
  }
  return loops;
}

const std::vector<DenseCase>& Cases() {
  static const std::vector<DenseCase> cases = {
      {1, 37, 70, kBiasN, false, true},    // a GEMV of a W handed over unpacked: read in place
      {7, 64, 130, kBias1N, true, false},  // a row tail; [1, N] bias; residual
      {13, 5, 64, kNoBias, false, true},   // short reduction; whole panels on AVX-512
      {64, 33, 256, kBiasN, false, true},  // few panels: row tiles split between tasks
      {3, 16, 3, kBiasN, true, true},      // fewer columns than a vector, fewer rows than a tile
      {25, 128, 96, kBiasN, true, true},   // packed panels and every epilogue
      {6, 1, 48, kNoBias, false, false},   // K = 1
  };
  return cases;
}

TEST(DenseSchedule, EveryEntryMatchesTheReference) {
  int entries = 0;
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (e.kind != schedule::ScheduleKind::kDense) continue;
    ++entries;
    SCOPED_TRACE(e.name);
    ScopedEnv force("EMBER_SCHEDULE", e.name);
    for (const DenseCase& dc : Cases()) {
      std::string loops = CheckDense(dc);
      EXPECT_NE(loops.find("accd"), std::string::npos)
          << "the dense kernel did not take " << CaseName(dc);
    }
  }
  EXPECT_EQ(entries, 5);  // AVX-512, AVX2, SSE, NEON, NEON32
}

// The NEON entry reads four k of a row of A in one load where K allows and the tile's rows keep
// a vector each besides their accumulators (a GEMV, a row tail); elsewhere a load per k.
TEST(DenseSchedule, NeonTilesReadFourStepsOfAPerLoad) {
  ScopedEnv force("EMBER_SCHEDULE", "dense_neon");
  EXPECT_NE(CheckDense({1, 64, 48, kBiasN, false, true}).find("lane("), std::string::npos);
  EXPECT_NE(CheckDense({7, 128, 40, kBias1N, true, false}).find("lane("), std::string::npos);
  EXPECT_EQ(CheckDense({1, 37, 48, kBiasN, false, true}).find("lane("), std::string::npos);
  EXPECT_EQ(CheckDense({12, 64, 32, kNoBias, false, false}).find("lane("), std::string::npos);
  // A GEMV's panels are 8 vectors wide (GemvVectors), packed so by the plan.
  const std::string gemv = CheckDense({1, 64, 80, kBiasN, true, true, 1.0, 32});
  EXPECT_NE(gemv.find("accdmr0_7["), std::string::npos);
  EXPECT_NE(gemv.find("lane("), std::string::npos);
}

struct BatchedCase {
  std::vector<int64_t> batch;
  int64_t m, k, n;
  bool w_per_batch;  // else W's leading axes are 1: one matrix for every batch index
  bool add_bias;     // an Add of an [M, N] operand after the product (attention's causal mask)
};

// MatMul(A [batch..., M, K], W) [-> Add [M, N]] as one group, run and compared with a reference;
// returns the loop IR.
std::string CheckBatched(const BatchedCase& bc) {
  std::ostringstream name;
  name << "batch" << bc.batch.size() << "m" << bc.m << "k" << bc.k << "n" << bc.n
       << (bc.w_per_batch ? "w" : "shared") << (bc.add_bias ? "add" : "");
  SCOPED_TRACE(name.str());
  int64_t batch = 1;
  for (int64_t b : bc.batch) batch *= b;
  auto with = [&](std::vector<int64_t> lead, int64_t rows, int64_t cols) {
    lead.push_back(rows);
    lead.push_back(cols);
    return lead;
  };
  const std::vector<int64_t> ashape = with(bc.batch, bc.m, bc.k),
                             oshape = with(bc.batch, bc.m, bc.n);
  const std::vector<int64_t> wshape =
      with(bc.w_per_batch ? bc.batch : std::vector<int64_t>(bc.batch.size(), 1), bc.k, bc.n);
  KernelGraph kg;
  const int a = kg.Input("a", ashape), w = kg.Input("w", wshape);
  const int bias = bc.add_bias ? kg.Input("bias", {bc.m, bc.n}) : -1;
  int y = kg.Add("MatMul", {a, w}, {TensorType{oshape, kFloat32}})[0];
  if (bc.add_bias) y = kg.Add("Add", {y, bias}, {TensorType{oshape, kFloat32}})[0];
  FusedGroup group = kg.Group("matmul", {y});
  std::string loops;
  const auto lib = BuildWithLoops(group, nullptr, &loops);
  auto f = lib->Get("matmul");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return loops;
  HostArray ha(ashape, kFloat32), hw(wshape, kFloat32), hb({bc.m, bc.n}, kFloat32),
      out(oshape, kFloat32);
  ha.FillRandom(31);
  hw.FillRandom(32);
  hb.FillRandom(33);
  std::vector<HostArray*> args{&ha, &hw};
  if (bc.add_bias) args.push_back(&hb);
  args.push_back(&out);
  EXPECT_EQ(Call(f, args), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* pa = ha.data<float>() + b * bc.m * bc.k;
    const float* pw = hw.data<float>() + (bc.w_per_batch ? b * bc.k * bc.n : 0);
    for (int64_t i = 0; i < bc.m; ++i) {
      for (int64_t j = 0; j < bc.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < bc.k; ++k) acc += double{pa[i * bc.k + k]} * pw[k * bc.n + j];
        if (bc.add_bias) acc += hb.data<float>()[i * bc.n + j];
        const float got = out.data<float>()[(b * bc.m + i) * bc.n + j];
        if (std::fabs(got - acc) > 1e-4 * (1 + std::fabs(acc)) && ++bad <= 5) {
          ADD_FAILURE() << "y[" << b << "][" << i << "][" << j << "] = " << got << ", expected "
                        << acc;
        }
      }
    }
  }
  return loops;
}

// Batched MatMuls (attention's Q K^T and P V) take the dense tiles, one product per batch index:
// W per batch index or shared, panels and column tails, row tails, a GEMV, split row tiles and
// an epilogue that reads an [M, N] operand at every batch index.
TEST(DenseSchedule, BatchedMatMulsOfEveryEntryMatchTheReference) {
  const std::vector<BatchedCase> cases = {
      {{2, 3}, 7, 33, 70, true, true},  // two batch axes, row and column tails, the mask Add
      {{4}, 13, 16, 64, false, false},  // one W for every batch index
      {{2, 2}, 1, 20, 5, true, true},   // GEMVs narrower than a vector
      {{2}, 64, 16, 32, true, false},   // few panels: row tiles split between tasks
  };
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (e.kind != schedule::ScheduleKind::kDense) continue;
    SCOPED_TRACE(e.name);
    ScopedEnv force("EMBER_SCHEDULE", e.name);
    for (const BatchedCase& bc : cases) {
      EXPECT_NE(CheckBatched(bc).find("accd"), std::string::npos)
          << "the dense kernel did not take the batched MatMul";
    }
  }
}

TEST(DenseSchedule, HostScheduleAndDefaultLoweringAgree) {
  for (const DenseCase& dc : Cases()) {
    {
      ScopedEnv none("EMBER_SCHEDULE", "");
      CheckDense(dc);
    }
    ScopedEnv disable("EMBER_DISABLE_SCHEDULES", "1");
    EXPECT_EQ(CheckDense(dc).find("accd"), std::string::npos);
  }
}

// The tuning hook names the workload, offers tiles that fit the registers, and every candidate
// (and only a sane one) from a log is used and stays correct.
TEST(DenseSchedule, TuningCandidatesFromTheLogAreUsedAndCorrect) {
  ScopedEnv force("EMBER_SCHEDULE", "dense_avx2");
  const DenseCase dc{13, 24, 40, kBiasN, false, true};
  KernelGraph kg;
  FusedGroup group = DenseGraph(dc, &kg);
  testing::HostTuning tuning;
  lower::LowerGroup(group, tuning.Options());
  ASSERT_EQ(tuning.tasks.size(), 1u);
  const schedule::TuningTask& t = tuning.tasks[0];
  EXPECT_EQ(t.key.rfind("dense f32 m13 k24 n40 target=", 0), 0u) << t.key;
  EXPECT_EQ(t.defaults, (autotune::ParamSet{{"rows", 6}, {"vectors", 2}}));  // the AVX2 entry
  ASSERT_GE(t.candidates.size(), 3u);
  for (const autotune::ParamSet& p : t.candidates) {
    SCOPED_TRACE(autotune::ParamSetToString(p));
    autotune::TuningLog log;
    log.Put(autotune::TuningRecord{t.key, p, 1.0, "test"});
    const std::string loops = CheckDense(dc, &log);
    // The last accumulator of a main tile: rows x vectors of them.
    const std::string last = "accdm" + std::to_string(p.at("rows") - 1) + "_" +
                             std::to_string(p.at("vectors") - 1) + "[";
    EXPECT_NE(loops.find(last), std::string::npos);
    EXPECT_EQ(log.used().size(), 1u);
  }
  autotune::TuningLog absurd;  // 40 x 2 accumulators cannot fit 16 registers: the table's tile
  absurd.Put(autotune::TuningRecord{t.key, {{"rows", 40}, {"vectors", 2}}, 1.0, "test"});
  EXPECT_NE(CheckDense(dc, &absurd).find("accdm5_1["), std::string::npos);
}

// Weights packed at compile time: read by the kernel whose panel width they have (without a copy
// per call), and by the default lowering when another kernel is forced or schedules are off.
TEST(DenseSchedule, PanelPackedWeightsAreReadRightByEveryPath) {
  for (const DenseCase& base :
       {DenseCase{13, 20, 150, kBiasN, true, true},     // 2 panels + 22
        DenseCase{8, 7, 64, kNoBias, false, false},     // one panel, no rest
        DenseCase{1, 37, 150, kBiasN, false, true}}) {  // a GEMV streams the panels too
    DenseCase dc = base;
    dc.packed_width = 64;  // AVX-512: 4 vectors of 16
    {
      ScopedEnv force("EMBER_SCHEDULE", "dense_avx512");
      const std::string loops = CheckDense(dc);
      EXPECT_NE(loops.find(dc.m >= 6 ? "accdm5_3[" : "accdmr0_3["), std::string::npos);
      EXPECT_EQ(loops.find("_panel_ws"), std::string::npos) << "copied panels again";
    }
    {
      ScopedEnv force("EMBER_SCHEDULE", "dense_avx2");  // panels of 16: refuses these
      EXPECT_EQ(CheckDense(dc).find("accd"), std::string::npos);
    }
    ScopedEnv disable("EMBER_DISABLE_SCHEDULES", "1");
    CheckDense(dc);
  }
}

// alpha != 1 (and transposed operands, which CanonicalizeDense removes for constant weights) are
// left to the default lowering, which must still be right.
TEST(DenseSchedule, GemmsItDoesNotTakeFallBack) {
  ScopedEnv force("EMBER_SCHEDULE", "dense_avx512");
  DenseCase scaled{9, 20, 40, kBiasN, false, true, 0.5};
  EXPECT_EQ(CheckDense(scaled).find("accd"), std::string::npos);
}

}  // namespace
}  // namespace ember::compiler
