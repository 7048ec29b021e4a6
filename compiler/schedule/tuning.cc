// The tuning hook, workload keys and cache sizes (see tuning.h).
#include "tuning.h"

#include <ember/compiler/ir/layout.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "conv_group.h"
#include "tuning_board.h"

namespace ember::compiler::schedule {
namespace {

// Typical cores per target class, for cross targets and hosts without sysfs cache entries.
CacheSizes TableCacheSizes(TargetClass tc) {
  constexpr int64_t kKiB = 1024;
  switch (tc) {
    case TargetClass::kNeon64:
      return {64 * kKiB, 512 * kKiB, 0};
    case TargetClass::kNeon32:
    case TargetClass::kGeneric:
      return {32 * kKiB, 256 * kKiB, 0};
    default:
      return {32 * kKiB, 1024 * kKiB, 8 * 1024 * kKiB};
  }
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

ParamSet TunedParams(const lower::ScheduleOptions& opts, const std::string& key,
                     const ParamSet& defaults,
                     const std::function<std::vector<ParamSet>()>& candidates) {
  if (opts.tuning_tasks != nullptr) {
    TuningTask task;
    task.key = key;
    task.defaults = defaults;
    task.candidates.push_back(defaults);
    for (ParamSet& c : candidates()) {
      if (std::find(task.candidates.begin(), task.candidates.end(), c) == task.candidates.end()) {
        task.candidates.push_back(std::move(c));
      }
    }
    opts.tuning_tasks->push_back(std::move(task));
  }
  if (opts.tuning_log == nullptr) return defaults;
  const TuningRecord* r = opts.tuning_log->Find(key);
  if (r == nullptr) return defaults;
  // A record naming other parameters was written for another version of the schedule.
  if (r->params.size() != defaults.size()) return defaults;
  for (const auto& kv : defaults) {
    if (r->params.count(kv.first) == 0) return defaults;
  }
  opts.tuning_log->NoteUsed(key);
  return r->params;
}

std::string WorkloadTarget(const Target& t) {
  return " target=" + t.triple + ":" + t.cpu + ":v" + std::to_string(t.vector_bits) +
         TuningBoardSuffix();
}

int64_t ParseCacheSize(const std::string& text) {
  if (text.empty() || text.size() > 16) return -1;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return -1;
  int64_t v = std::stoll(text.substr(0, digits));
  std::string unit = text.substr(digits);
  if (unit.empty()) return v;
  if (unit == "K") return v * 1024;
  if (unit == "M") return v * 1024 * 1024;
  if (unit == "G") return v * 1024 * 1024 * 1024;
  return -1;
}

CacheSizes HostCacheSizes() {
  Target host = Target::Host();
  CacheSizes c = TableCacheSizes(ClassifyTarget(host));
  const std::string base = "/sys/devices/system/cpu/cpu0/cache/index";
  constexpr int kMaxIndex = 8;
  for (int i = 0; i < kMaxIndex; ++i) {
    std::string dir = base + std::to_string(i) + "/";
    std::string level = ReadSmallFile(dir + "level");
    std::string type = ReadSmallFile(dir + "type");
    int64_t size = ParseCacheSize(ReadSmallFile(dir + "size"));
    if (level.empty() || size <= 0) continue;
    if (level == "1" && type == "Data") c.l1d = size;
    if (level == "2" && type != "Instruction") c.l2 = size;
    if (level == "3" && type != "Instruction") c.l3 = size;
  }
  return c;
}

CacheSizes TargetCacheSizes(const Target& t) {
  if (t.is_host) {
    static const CacheSizes host = HostCacheSizes();
    return host;
  }
  return TableCacheSizes(ClassifyTarget(t));
}

int VectorRegisters(TargetClass tc) {
  return tc == TargetClass::kAvx512 || tc == TargetClass::kNeon64 ? 32 : 16;
}

int FloatLanes(TargetClass tc) {
  switch (tc) {
    case TargetClass::kAvx512:
      return 16;
    case TargetClass::kAvx2:
      return 8;
    case TargetClass::kSse:
    case TargetClass::kNeon64:
    case TargetClass::kNeon32:
      return 4;
    case TargetClass::kGeneric:
      break;
  }
  return 1;
}

int TargetVectorRegisters(const lower::ScheduleOptions& opts) {
  return opts.target != nullptr ? VectorRegisters(ClassifyTarget(*opts.target)) : 16;
}

int64_t AccumulatorRegisters(const Target& t) { return VectorRegisters(ClassifyTarget(t)) - 4; }

// ---- conv2d_nchw_wide: lanes x oc_block accumulators, q_chunk output tiles per L2 sweep ----

namespace {

std::string ConvWorkloadKey(const char* family, const ConvShape& s, const Target& t,
                            const std::string& extra = "") {
  std::ostringstream os;
  os << family << " f32 n" << s.n << " c" << s.c << " h" << s.h << " w" << s.w << " oc" << s.oc
     << " o" << s.oh << "x" << s.ow << " k" << s.kh << "x" << s.kw << " s" << s.s_h << "x" << s.s_w
     << " p" << s.pad_t << "x" << s.pad_l << " g" << s.group << extra;
  if (!Undilated(s)) os << " d" << s.d_h << "x" << s.d_w;
  if (!IsNchw(s)) os << " " << LayoutName(s.in_block) << "-" << LayoutName(s.out_block);
  os << WorkloadTarget(t);
  return os.str();
}

int64_t SimdFloats(const Target& t) { return std::max(1, t.vector_bits / 32); }

// Register blocks around the table's: the same accumulator count reshaped, half of it (less
// pressure) and 1.5x (more reuse), all within the register file minus the input vector, the
// weight broadcast and a spare.
std::vector<ParamSet> ConvWideCandidates(const ConvShape& s, const Target& t,
                                         const Conv2dParams& d) {
  const int64_t vw = SimdFloats(t);
  const int64_t budget = AccumulatorRegisters(t);
  const int64_t k0 = std::max<int64_t>(1, d.lanes / vw);
  const int64_t acc0 = k0 * d.oc_block;
  std::vector<std::pair<double, ParamSet>> scored;
  for (int64_t k : {1, 2, 3, 4, 6, 8}) {
    for (int64_t ob : {1, 2, 3, 4, 6, 8}) {
      if (s.ocg % ob != 0) continue;  // the schedule would shrink it to another candidate
      const int64_t acc = k * ob;
      if (acc > budget || 4 * acc < budget) continue;
      double score = std::fabs(std::log2(static_cast<double>(acc) / acc0)) +
                     0.25 * std::fabs(std::log2(static_cast<double>(k) / k0));
      scored.push_back({score, ParamSet{{"lanes", k * vw}, {"oc_block", ob}}});
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // A handful: every candidate costs a kernel build and a measurement per workload.
  constexpr size_t kMaxCandidates = 8;
  std::vector<ParamSet> out;
  for (auto& sp : scored) {
    if (out.size() == kMaxCandidates) break;
    out.push_back(std::move(sp.second));
  }
  return out;
}

}  // namespace

Conv2dParams TunedConv2dWideParams(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                   const Conv2dParams& table) {
  ConvGroup m;
  if (opts.target == nullptr || !MatchConvGroup(group, &m)) return table;
  // The schedule shrinks oc_block to a divisor of the channels per group; say so in the key's
  // default so that the log and the candidates compare like with like.
  int64_t ocb = 1;
  for (int64_t cand : {table.oc_block, int64_t{4}, int64_t{2}, int64_t{1}}) {
    if (cand >= 1 && cand <= table.oc_block && m.s.ocg % cand == 0) {
      ocb = cand;
      break;
    }
  }
  ParamSet defaults{{"lanes", table.lanes}, {"oc_block", ocb}};
  const Target& t = *opts.target;
  ParamSet p = TunedParams(opts, ConvWorkloadKey("conv2d_nchw_wide", m.s, t), defaults,
                           [&] { return ConvWideCandidates(m.s, t, table); });
  // Hand-edited logs must not unroll giant blocks; out-of-range winners fall back to the table.
  constexpr int64_t kMaxLanes = 256, kMaxOcBlock = 32;
  if (p["lanes"] < 1 || p["lanes"] > kMaxLanes || p["oc_block"] < 1 ||
      p["oc_block"] > kMaxOcBlock) {
    p = defaults;
  }
  Conv2dParams out = table;
  out.lanes = std::max<int64_t>(1, p["lanes"]);
  out.oc_block = std::max<int64_t>(1, p["oc_block"]);
  return out;
}

// ---- conv2d_1x1: `width` plane positions x ocb channels of accumulators ----

int64_t TunedConv2d1x1Width(const FusedGroup& group, const lower::ScheduleOptions& opts,
                            int64_t ocb, int64_t simd_lanes, int64_t table_width) {
  ConvGroup m;
  if (opts.target == nullptr || simd_lanes < 1 || !MatchConvGroup(group, &m)) return table_width;
  const ConvShape& s = m.s;
  // Accumulators (width / simd_lanes x ocb registers) from half to all of the register budget.
  const int64_t budget = AccumulatorRegisters(*opts.target);
  auto candidates = [&] {
    std::vector<ParamSet> out{{{"width", table_width}}};
    for (int64_t vectors = budget / ocb; vectors >= 1 && 2 * vectors * ocb >= budget; --vectors) {
      const int64_t width = vectors * simd_lanes;
      if (width != table_width && s.oh * s.ow >= width) out.push_back({{"width", width}});
    }
    return out;
  };
  std::string key = ConvWorkloadKey("conv2d_1x1", s, *opts.target, " ocb" + std::to_string(ocb));
  ParamSet p = TunedParams(opts, key, {{"width", table_width}}, candidates);
  const int64_t width = p["width"];
  constexpr int64_t kMaxWidth = 512;
  if (width < simd_lanes || width > kMaxWidth || width % simd_lanes != 0) return table_width;
  return width;
}

// ---- dense: rows x vectors accumulators ----

DenseParams TunedDenseParams(const lower::ScheduleOptions& opts, int64_t m, int64_t k, int64_t n,
                             const DenseParams& table, int64_t fixed_vectors) {
  if (opts.target == nullptr) return table;
  const Target& t = *opts.target;
  const int64_t registers = VectorRegisters(ClassifyTarget(t));
  // Accumulators, the weight vectors of one k and the broadcast of A.
  auto fits = [&](int64_t rows, int64_t vectors) {
    return rows >= 1 && vectors >= 1 && rows * vectors + vectors + 1 <= registers;
  };
  constexpr int64_t kMaxRows = 12, kMaxVectors = 4;
  // The tuner times the first few: the tiles with the most accumulators come first (more reuse
  // per load), wider ones (fewer broadcasts per FMA) first among equals.
  auto candidates = [&] {
    std::vector<std::pair<int64_t, int64_t>> tiles;  // (rows, vectors)
    for (int64_t vectors = 1; vectors <= kMaxVectors; ++vectors) {
      if (fixed_vectors > 0 && vectors != fixed_vectors) continue;
      for (int64_t rows = 2; rows <= kMaxRows && rows <= m; ++rows) {
        if (fits(rows, vectors) && 2 * rows * vectors >= registers - vectors - 1) {
          tiles.emplace_back(rows, vectors);
        }
      }
    }
    std::stable_sort(tiles.begin(), tiles.end(), [](const auto& a, const auto& b) {
      const int64_t acc_a = a.first * a.second, acc_b = b.first * b.second;
      return acc_a != acc_b ? acc_a > acc_b : a.second > b.second;
    });
    std::vector<ParamSet> out;
    for (const auto& [rows, vectors] : tiles) out.push_back({{"rows", rows}, {"vectors", vectors}});
    return out;
  };
  std::ostringstream key;
  key << "dense f32 m" << m << " k" << k << " n" << n << WorkloadTarget(t);
  ParamSet p =
      TunedParams(opts, key.str(), {{"rows", table.rows}, {"vectors", table.vectors}}, candidates);
  DenseParams tuned = table;
  tuned.rows = p["rows"];
  tuned.vectors = p["vectors"];
  if (tuned.rows > kMaxRows || tuned.vectors > kMaxVectors || !fits(tuned.rows, tuned.vectors) ||
      (fixed_vectors > 0 && tuned.vectors != fixed_vectors)) {
    return table;  // a hand-edited log must not unroll giant tiles
  }
  return tuned;
}

// ---- conv2d_nchw_ocvec: ow_block columns x oc_vectors vectors of accumulators ----

namespace {

// The largest divisor of n that is at most `most` (1 when most < 1).
int64_t LargestDivisorAtMost(int64_t n, int64_t most) {
  int64_t d = std::max<int64_t>(1, std::min(n, most));
  while (n % d != 0) --d;
  return d;
}

}  // namespace

int64_t CacheRowChunk(const ConvShape& s, const Target& t) {
  constexpr int64_t kFloat = 4;
  const int64_t budget = TargetCacheSizes(t).l2 / 2;
  const int64_t pw = (s.ow - 1) * s.s_w + SpanW(s);
  const int64_t whole = s.c * ((s.oh - 1) * s.s_h + SpanH(s)) * pw * kFloat;
  // Every chunk streams all of the conv's weights: where they outweigh its input (MobileNetV2's
  // 7x7 and 14x14 planes: 1.6 MB of weights against 63 KB of input), chunking rows would
  // fetch them from L3 once per chunk, while the unchunked input stays in L2 for every block.
  const int64_t weights = s.oc * s.icg * s.kh * s.kw * kFloat;
  if (whole <= budget && weights >= whole) return s.oh;
  const int64_t most = std::max<int64_t>(1, s.oh / kMinRowChunks);
  if (whole <= budget) return LargestDivisorAtMost(s.oh, most);
  const int64_t per_row = s.c * s.s_h * pw * kFloat;  // input rows one more output row needs
  const int64_t halo = s.c * std::max<int64_t>(0, SpanH(s) - s.s_h) * pw * kFloat;
  return LargestDivisorAtMost(s.oh, std::min(most, (budget - halo) / per_row));
}

int64_t CacheIcChunk(const ConvShape& s, int64_t ocb, int64_t budget) {
  const int64_t per_ic = s.kh * s.kw * ocb * int64_t{4};
  // Whole channel blocks of a blocked input: a chunk that ends inside a block cannot take the
  // block's channels as one vector load (MobileNetV2's 144 -> 32 projection in chunks of 72 ran
  // at a third of the speed of its neighbours).
  const int64_t unit = s.in_block > 1 && s.icg % s.in_block == 0 ? s.in_block : 1;
  int64_t icc = std::max(unit, std::min(s.icg, budget / per_ic));
  while (s.icg % icc != 0 || icc % unit != 0) --icc;
  return icc;
}

OcVecBlocking TunedConv2dOcVecBlocking(const ConvShape& s, const lower::ScheduleOptions& opts,
                                       int64_t oc_vectors, int64_t oc_block,
                                       int64_t table_ow_block) {
  OcVecBlocking table{table_ow_block, s.oh, s.icg};
  if (opts.target == nullptr || oc_vectors < 1 || oc_block < 1) return table;
  const Target& t = *opts.target;
  const CacheSizes caches = TargetCacheSizes(t);
  table.row_chunk = CacheRowChunk(s, t);
  table.ic_chunk = CacheIcChunk(s, oc_block, caches.l1d / 2);
  const int64_t l2_ic_chunk = CacheIcChunk(s, oc_block, caches.l2 / 4);
  const int64_t budget = AccumulatorRegisters(t);
  auto candidates = [&] {
    // Block widths whose accumulators fill a third to all of the register budget, then the
    // other chunking (none, or half the cache-derived chunk) with the table's width.
    std::vector<ParamSet> out;
    auto add = [&](int64_t owb, int64_t rc, int64_t icc) {
      out.push_back({{"ow_block", owb}, {"row_chunk", rc}, {"ic_chunk", icc}});
    };
    std::set<int64_t> seen{ChooseOwBlock(s.ow, table_ow_block)};
    for (int64_t most = budget / oc_vectors; most >= 1 && 3 * most * oc_vectors >= budget; --most) {
      if (seen.insert(ChooseOwBlock(s.ow, most)).second) {
        add(most, table.row_chunk, table.ic_chunk);
      }
    }
    if (table.row_chunk < s.oh) {
      add(table_ow_block, s.oh, table.ic_chunk);
      int64_t half = std::max<int64_t>(1, table.row_chunk / 2);
      while (s.oh % half != 0) --half;
      if (half != table.row_chunk) add(table_ow_block, half, table.ic_chunk);
    }
    // Weights of a channel block held in L2 instead of L1, or not chunked at all.
    for (int64_t icc : {l2_ic_chunk, s.icg}) {
      if (icc != table.ic_chunk) add(table_ow_block, table.row_chunk, icc);
    }
    return out;
  };
  std::string key = ConvWorkloadKey("conv2d_nchw_ocvec", s, t, " ocv" + std::to_string(oc_vectors));
  ParamSet p = TunedParams(
      opts, key,
      {{"ow_block", table.ow_block}, {"row_chunk", table.row_chunk}, {"ic_chunk", table.ic_chunk}},
      candidates);
  constexpr int64_t kMaxOwBlock = 64;
  const int64_t owb = p["ow_block"], rc = p["row_chunk"], icc = p["ic_chunk"];
  if (owb < 1 || owb > kMaxOwBlock || rc < 1 || rc > s.oh || s.oh % rc != 0 || icc < 1 ||
      icc > s.icg || s.icg % icc != 0) {
    return table;
  }
  return OcVecBlocking{owb, rc, icc};
}

}  // namespace ember::compiler::schedule
