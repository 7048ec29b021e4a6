// A fused group made of one 2-D convolution and its elementwise epilogue, as the conv schedules
// see it: matching, the convolution's geometry, and lowering of the epilogue.
#ifndef EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_
#define EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_

#include <ember/compiler/ir/fused_group.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/compiler/lower.h"

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
};

/*! \brief True when the conv reads and writes NCHW (kernels other than channels-in-lanes). */
inline bool IsNchw(const ConvShape& s) { return s.in_block == 0 && s.out_block == 0; }

/*! \brief One float32 Conv (dilation 1, strides <= 4) whose data, weight and bias are group
 * inputs, followed by elementwise/broadcast nodes, with one group output of the conv's shape. */
struct ConvGroup {
  const Node* conv = nullptr;
  int x_id = -1, w_id = -1, bias_id = -1;  // value ids; bias_id < 0 without bias
  ConvShape s;
};

/*! \brief The output channel of element i of the conv's output (in its layout). */
te::Expr OutputChannel(const ConvShape& s, const std::vector<te::Expr>& i);

/*! \brief True when value `vid` is one of the group's inputs (read, not computed, inside it). */
bool IsGroupInput(const FusedGroup& group, int vid);

/*! \brief Fills *m and returns true when the group has the form above and its conv reads plain
 * (OIHW or blocked) weights, not Winograd-transformed ones (kWinogradTileAttr). */
bool MatchConvGroup(const FusedGroup& group, ConvGroup* m);
/*! \brief MatchConvGroup for the convs with Winograd-transformed weights only. */
bool MatchWinogradConvGroup(const FusedGroup& group, ConvGroup* m);

/*! \brief Index of the conv's raw result (no bias) for output element (n, oc, oh, ow). */
using ConvResultIndex = std::function<te::Expr(const std::vector<te::Expr>& i)>;

/*!
 * \brief Lowers the group with the convolution replaced by reads of a float32 workspace of
 * `result_elems` elements (named after the conv, "_result_ws") at `index`, plus the bias. The
 * returned function's body is the epilogue only; *result is that workspace (already in
 * f.workspaces) and *x, *w the argument buffers of the conv's data and weight. The caller
 * prepends the statements that fill *result. Returns false when a node has no usable compute.
 */
bool LowerConvEpilogue(const FusedGroup& group, const ConvGroup& m, int64_t result_elems,
                       const ConvResultIndex& index, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* f, lower::Buffer* result, lower::Buffer* x,
                       lower::Buffer* w);

/*! \brief Value of the group's output at element i (n, oc, oh, ow) given the conv's raw result
 * `acc` there (no bias): bias and epilogue nodes applied, loads on the function's arguments. */
using ConvEpilogueAt = std::function<te::Expr(const std::vector<te::Expr>& i, const te::Expr& acc)>;

/*!
 * \brief The group's epilogue as a per-element expression, for schedules that apply it in
 * registers before their single store. Fills f->name and f->args (the group inputs, then the
 * output; f->body stays empty), *x and *w (the conv's data and weight buffers) and *at. Returns
 * false when a node has no usable compute or an epilogue node reads the conv's result at another
 * element than the one it writes.
 */
bool BuildConvEpilogueAt(const FusedGroup& group, const ConvGroup& m, lower::LoweredFunc* f,
                         lower::Buffer* x, lower::Buffer* w, ConvEpilogueAt* at);

/*! \brief The operands of a group's anchor (a conv, a dense product) BuildEpilogueAt needs. */
struct AnchorOperands {
  int x_id = -1, w_id = -1;  // value ids of the data and the weights
  int bias_id = -1;          // value id of the bias the anchor adds, or < 0
  /*! \brief The bias element added at output element i (unused without a bias). */
  std::function<std::vector<te::Expr>(const std::vector<te::Expr>& i)> bias_index;
};

/*!
 * \brief BuildConvEpilogueAt for any anchor node: `at` maps an output element and the anchor's
 * raw result there (no bias) to the group's output, the bias and the epilogue nodes applied.
 */
bool BuildEpilogueAt(const FusedGroup& group, const Node& anchor, const AnchorOperands& operands,
                     lower::LoweredFunc* f, lower::Buffer* x, lower::Buffer* w, ConvEpilogueAt* at);

/*! \brief True when applying `at` at (n, oc, 0, q), q = oh * OW + ow the flat plane position,
 * reads every operand where (n, oc, oh, ow) would: each operand reads the whole output plane or
 * none of it (no broadcast along one spatial axis only). Lets a schedule run the epilogue over
 * flat plane positions. */
bool EpilogueReadsPlaneFlat(const ConvEpilogueAt& at, int64_t ow);

/*! \brief `at` applied to a vector `acc` of `lanes` channels of one NCHW[lanes]c block at
 * (n, cb, oh, ow), lane k being channel cb * lanes + k; undefined when the epilogue does not
 * vectorize (VectorizeLanes refuses intrinsics on lane-dependent values, for one). */
te::Expr EpilogueOnBlockVector(const ConvEpilogueAt& at, const te::Expr& n, const te::Expr& cb,
                               const te::Expr& oh, const te::Expr& ow, const te::Expr& acc,
                               int lanes);

/*! \brief True when EpilogueOnBlockVector is defined for this epilogue. */
bool EpilogueVectorizes(const ConvEpilogueAt& at, int lanes);

/*! \brief A float32 buffer of `size` elements in `scope`. */
lower::Buffer NewFloatBuffer(const std::string& name, int64_t size, lower::BufferScope scope);

/*! \brief A register-tile accumulator: one local of `lanes` float32 values (a SIMD register when
 * lanes is the target's vector width; a scalar when 1). */
lower::Buffer NewVectorAccumulator(const std::string& name, int64_t lanes);

/*! \brief The statements of a register tile of rows x vectors accumulators of `lanes` floats
 * (locals PREFIX<r>_<v>, added to f->locals), each reduction step adding a broadcast value times
 * a weight vector: `init` zeroes them, `update` is one step acc[r][v] += x(r) * w(v), `store`
 * holds store(r, v, acc) for each once reduced. */
struct BroadcastTile {
  BroadcastTile(const std::string& prefix, int64_t rows, int64_t vectors, int lanes,
                const std::function<te::Expr(int64_t r)>& x,
                const std::function<te::Expr(int64_t v)>& w,
                const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store,
                lower::LoweredFunc* f);
  /*! \brief init, then `reduction` (loops around `update`), then the stores. */
  lower::Stmt With(const lower::Stmt& reduction) const;

  std::vector<lower::Stmt> init, update, store;
};

/*! \brief Copies image n of the conv's input `x` into a zero-padded [C][PH][PW] plane set
 * ([C/x][PH][PW][x] for NCHW[x]c input; rows and columns past the input's end padding are zeros
 * too): border columns and rows are zero stores, interior rows a contiguous copy (no per-element
 * bounds check). Parallel over planes when worth it. */
lower::Stmt PadConvInput(const ConvShape& s, const lower::Buffer& x, const lower::Buffer& padded,
                         const te::Expr& n, int64_t ph, int64_t pw,
                         const lower::ScheduleOptions& opts);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_CONV_GROUP_H_
