// Tunable schedule parameters: how a schedule describes its workload and candidates, takes the
// tuning log's winner, and how defaults follow the target's caches.
//
// A schedule with tunables calls TunedParams once it knows the group fits (before any check that
// depends on the parameters), passing
//   - a workload key: the schedule family, the shape and the target (WorkloadTarget), e.g.
//     "conv2d_nchw_wide f32 n1 c64 h56 w56 oc64 o56x56 k3x3 s1x1 p1x1 g1 target=x86_64-...:cpu";
//   - its default ParamSet (from the per-target table, adjusted by the cache sizes below);
//   - a function listing a few candidate ParamSets (the default first), each of which the
//     schedule must lower correctly.
// It gets back the tuning log's winner for the key when the compile has a log holding one with
// exactly the default's parameter names, else the default. `emberc --tune` (tuner.h) lowers each
// group once in a describing mode that records these calls, builds every candidate into a small
// library, times it, and stores the fastest in the log.
//
// Cache sizes: for the host they are read from sysfs (/sys/devices/system/cpu/cpu0/cache/
// index*/{level,type,size}); for cross targets (and when sysfs is missing) from a per-target-class
// table of typical cores (x86: 32 KiB L1d, 1 MiB L2; AArch64: 64 KiB L1d, 512 KiB L2; ARMv7: 32
// KiB L1d, 256 KiB L2). Where a conv's padded input exceeds half of L2, conv2d_nchw_ocvec runs
// its tiles in chunks of output rows whose input fits there (CacheRowChunk, a few chunks at
// least), and it splits the reduction over input channels so that a channel block's weights for
// one chunk fit half of L1d (CacheIcChunk); the register blocks themselves follow the register
// file (VectorRegisters).
#ifndef EMBER_COMPILER_SCHEDULE_TUNING_H_
#define EMBER_COMPILER_SCHEDULE_TUNING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../autotune/tuning_log.h"
#include "conv_group.h"
#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"
#include "schedule.h"

namespace ember::compiler::schedule {

using autotune::ParamSet;
using autotune::TuningLog;
using autotune::TuningRecord;

/*! \brief One tunable workload as a schedule described it. */
struct TuningTask {
  std::string key;
  ParamSet defaults;
  std::vector<ParamSet> candidates;  // distinct, defaults first
};

/*! \brief The hook (see the header comment). */
ParamSet TunedParams(const lower::ScheduleOptions& opts, const std::string& key,
                     const ParamSet& defaults,
                     const std::function<std::vector<ParamSet>()>& candidates);

/*! \brief " target=TRIPLE:CPU" (plus "+VECTOR_BITS" when features were forced), the tail of every
 * workload key: a winner measured on one CPU is not reused for another. */
std::string WorkloadTarget(const Target& t);

struct CacheSizes {
  int64_t l1d = 0;  // bytes
  int64_t l2 = 0;
  int64_t l3 = 0;  // 0 when there is none
};

/*! \brief Parses sysfs cache size text ("48K", "2048K", "1M", "512"); -1 when malformed. */
int64_t ParseCacheSize(const std::string& text);
/*! \brief The host's caches from sysfs; the table's values for what sysfs does not say. */
CacheSizes HostCacheSizes();
/*! \brief HostCacheSizes() for the host, else the table's values for the target class. */
CacheSizes TargetCacheSizes(const Target& t);

/*! \brief SIMD registers of the target class (32 on AVX-512 and AArch64, else 16). */
int VectorRegisters(TargetClass tc);
/*! \brief float32 lanes of one SIMD register of the target class (1: no SIMD assumed). */
int FloatLanes(TargetClass tc);
/*! \brief VectorRegisters of the compile target; 16 when the options name none. */
int TargetVectorRegisters(const lower::ScheduleOptions& opts);
/*! \brief Vector registers a register tile's accumulators may take on `t`: the register file
 *  minus the operands each reduction step loads and broadcasts, and a spare (four). */
int64_t AccumulatorRegisters(const Target& t);

/*! \brief conv2d_nchw_wide's hook: its params for the group, from the log or the table. */
Conv2dParams TunedConv2dWideParams(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                   const Conv2dParams& table);

/*! \brief conv2d_1x1's hook: plane positions per register tile (a multiple of simd_lanes) for a
 * tile of `ocb` output channels, from the log, else `table_width`. */
int64_t TunedConv2d1x1Width(const FusedGroup& group, const lower::ScheduleOptions& opts,
                            int64_t ocb, int64_t simd_lanes, int64_t table_width);

/*!
 * \brief dense.cc's hook: rows x vectors of the register tile for an M x K x N product, from the
 * log, else `table`. Candidates use at least half of the register file and fit it with the
 * weight vectors and a broadcast; with `fixed_vectors` > 0 (weights packed in panels of that many
 * vectors) only the rows vary.
 */
DenseParams TunedDenseParams(const lower::ScheduleOptions& opts, int64_t m, int64_t k, int64_t n,
                             const DenseParams& table, int64_t fixed_vectors = 0);

/*! \brief conv2d_nchw_ocvec's tunable blocking. */
struct OcVecBlocking {
  /*! \brief Output columns per register tile (the schedule rounds it to fit the width). */
  int64_t ow_block = 0;
  /*! \brief Output rows per cache chunk, a divisor of the output height: the tile loop runs
   * chunk-major so that a chunk's input rows stay in L2 while every channel block reads them.
   * The output height itself means no chunking. */
  int64_t row_chunk = 0;
  /*! \brief Input channels per reduction chunk, a divisor of the channels per group: every tile
   * of a chunk reads the same slice of the channel block's weights while it is in cache, and the
   * next chunk adds onto the partial sums. The channels per group themselves mean no chunking. */
  int64_t ic_chunk = 0;
};

/*!
 * \brief Rows per chunk such that the input rows of one chunk take at most half of the target's
 * L2 (TargetCacheSizes), and at least kMinRowChunks chunks: the tiles run chunk-major, so a
 * parallel launch gives each thread whole chunks, a band of rows, which is what the kernels
 * before and after it wrote and read on that thread's core (on a multi-die CPU a read of another
 * core's rows costs several times a read from its own cache). No chunks where the input fits
 * and the weights are larger: each chunk would stream all of them again.
 */
constexpr int64_t kMinRowChunks = 4;
int64_t CacheRowChunk(const ConvShape& s, const Target& t);

/*!
 * \brief Input channels per chunk such that a chunk's weights for `ocb` output channels take at
 * most `budget` bytes: the largest divisor of the channels per group that fits (at least 1), in
 * whole channel blocks where the input is blocked (at least one block).
 */
int64_t CacheIcChunk(const ConvShape& s, int64_t ocb, int64_t budget);

/*!
 * \brief conv2d_nchw_ocvec's hook: its blocking for a conv of shape `s` (as its tiles see it:
 * OcVecTileShape) when each column holds the `oc_block` output channels of its tile in
 * `oc_vectors` accumulator vectors, from the log, else
 * `table_ow_block`, CacheRowChunk and the ic chunk whose weights fill half of L1d
 * (CacheIcChunk). The output-channel block stays the table's: it fixes the weight packing done
 * at compile time.
 */
OcVecBlocking TunedConv2dOcVecBlocking(const ConvShape& s, const lower::ScheduleOptions& opts,
                                       int64_t oc_vectors, int64_t oc_block,
                                       int64_t table_ow_block);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_TUNING_H_
