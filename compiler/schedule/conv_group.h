// A fused group made of one 2-D convolution and its elementwise epilogue, as the conv schedules
// see it: matching, the convolution's geometry, and the conv's view of the epilogue builder
// (epilogue.h, shared with the dense and pool schedules).
#ifndef EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_
#define EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_

#include <ember/compiler/ir/fused_group.h>

#include <functional>
#include <vector>

#include "ember/compiler/lower.h"
#include "epilogue.h"

namespace ember::compiler::schedule {

struct ConvShape {
  int64_t n, c, h, w;       // input
  int64_t oc, oh, ow;       // output
  int64_t kh, kw;           // kernel
  int64_t s_h, s_w;         // strides
  int64_t pad_t, pad_l;     // leading pads
  int64_t group, icg, ocg;  // channels per group
  // Channel blocks of the input and output layouts (0: NCHW; see ember/compiler/ir/layout.h).
  int64_t in_block = 0, out_block = 0;
  // Dilations (1 along an axis whose kernel is 1: they change nothing there).
  int64_t d_h = 1, d_w = 1;
};

/*! \brief True when the conv reads and writes NCHW (kernels other than channels-in-lanes). */
inline bool IsNchw(const ConvShape& s) { return s.in_block == 0 && s.out_block == 0; }

/*! \brief True when the taps are adjacent input pixels (the kernels that assume so check it). */
inline bool Undilated(const ConvShape& s) { return s.d_h == 1 && s.d_w == 1; }

/*! \brief The input rows / columns one output pixel's taps span. */
inline int64_t SpanH(const ConvShape& s) { return (s.kh - 1) * s.d_h + 1; }
inline int64_t SpanW(const ConvShape& s) { return (s.kw - 1) * s.d_w + 1; }

/*! \brief One float32 Conv (strides <= 4; any dilation) whose data, weight and bias are group
 * inputs, followed by elementwise/broadcast nodes, with one group output of the conv's shape. */
struct ConvGroup {
  const Node* conv = nullptr;
  int x_id = -1, w_id = -1, bias_id = -1;  // value ids; bias_id < 0 without bias
  ConvShape s;
};

/*! \brief The output channel of element i of the conv's output (in its layout). */
te::Expr OutputChannel(const ConvShape& s, const std::vector<te::Expr>& i);

/*! \brief The group's one Conv when every other node is elementwise/broadcast with a compute
 * rule; null otherwise. */
const Node* SingleConvOf(const FusedGroup& group);

/*! \brief Fills *m and returns true when the group has the form above and its conv reads plain
 * (OIHW or blocked) weights, not Winograd-transformed ones (kWinogradTileAttr). */
bool MatchConvGroup(const FusedGroup& group, ConvGroup* m);
/*! \brief MatchConvGroup for the convs with Winograd-transformed weights only. */
bool MatchWinogradConvGroup(const FusedGroup& group, ConvGroup* m);

/*! \brief Index of the conv's raw result (no bias) for output element (n, oc, oh, ow). */
using ConvResultIndex = std::function<te::Expr(const std::vector<te::Expr>& i)>;

/*!
 * \brief LowerEpilogue for the conv: the convolution replaced by reads of a float32 workspace of
 * `result_elems` elements (named after the conv, "_result_ws") at `index`, plus the bias; *x, *w
 * are the argument buffers of the conv's data and weight. Returns false (leaving *f alone) when
 * a node has no usable compute.
 */
bool LowerConvEpilogue(const FusedGroup& group, const ConvGroup& m, int64_t result_elems,
                       const ConvResultIndex& index, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* f, lower::Buffer* result, lower::Buffer* x,
                       lower::Buffer* w);

/*! \brief BuildEpilogueAt for the conv: `at` maps output element (n, oc, oh, ow) (with the
 * block lane last for NCHW[x]c) and the conv's raw result there to the group's output; *x and *w
 * are the conv's data and weight buffers; with `bias`, the bias is apart (see BuildEpilogueAt). */
bool BuildConvEpilogueAt(const FusedGroup& group, const ConvGroup& m, lower::LoweredFunc* f,
                         lower::Buffer* x, lower::Buffer* w, EpilogueAt* at,
                         BiasAt* bias = nullptr);

/*! \brief Copies image n of the conv's input `x` into a zero-padded [C][PH][PW] plane set
 * ([C/x][PH][PW][x] for NCHW[x]c input; rows and columns past the input's end padding are zeros
 * too): border columns and rows are zero stores, interior rows a contiguous copy (no per-element
 * bounds check). Parallel over planes when worth it. */
lower::Stmt PadConvInput(const ConvShape& s, const lower::Buffer& x, const lower::Buffer& padded,
                         const te::Expr& n, int64_t ph, int64_t pw,
                         const lower::ScheduleOptions& opts);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_
