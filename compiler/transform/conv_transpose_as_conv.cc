// The sub-pixel decomposition: output row y' = q*s + r (y' before the crop by the begin pad) of a
// stride-s ConvTranspose sums x[q - j] * w[r + j*s] over j, a stride-1 correlation of x with the
// flipped taps r, r + s, ... of w. One Conv computes every phase (r, c) at once, each phase a
// block of output channels whose taps are those of w, flipped and transposed to [out, in], with
// zeros where a phase has fewer taps than the longest; PhaseInterleave puts each phase's pixels
// in place and crops. A dilated kernel is its undilated equivalent with zero taps between. No
// zeros are stuffed into the input, and the conv schedules (1x1, direct, Winograd, blocked) run
// it. Anything else (1-D, 3-D, other dtypes, run-time weights) keeps the naive ConvTranspose.
#include "transform/conv_transpose_as_conv.h"

#include <ember/compiler/ir/window_attrs.h>

#include "ir/shape_util.h"

namespace ember {
namespace compiler {
namespace {

// One spatial axis of the decomposition.
struct PhaseAxis {
  int64_t in = 0;      // input extent
  int64_t stride = 1;  // number of phases
  int64_t dilation = 1;
  int64_t span = 0;  // the dilated kernel's extent
  int64_t taps = 0;  // sub-kernel length: ceil(span / stride)
  int64_t full = 0;  // the uncropped output's extent
  int64_t rows = 0;  // conv output extent: ceil(full / stride)
  int64_t crop = 0;  // the ConvTranspose's begin pad
  int64_t end_pad = 0;

  // Tap of the ConvTranspose kernel that sub-kernel tap t of phase r reads, or -1 (a zero tap).
  int64_t KernelTap(int64_t r, int64_t t) const {
    const int64_t e = r + (taps - 1 - t) * stride;
    return e < span && e % dilation == 0 ? e / dilation : -1;
  }
};

PhaseAxis Axis(const WindowAttrs& win, int64_t in, size_t a) {
  PhaseAxis ax;
  ax.in = in;
  ax.stride = win.strides[a];
  ax.dilation = win.dilations[a];
  ax.span = (win.kernel[a] - 1) * ax.dilation + 1;
  ax.taps = CeilDiv(ax.span, ax.stride);
  ax.full = ax.stride * (in - 1) + ax.span + win.output_padding[a];
  ax.rows = CeilDiv(ax.full, ax.stride);
  ax.crop = win.pads[a];
  ax.end_pad = win.pads[2 + a];
  return ax;
}

// Conv weight [group * phases * cg, cin / group, taps_h, taps_w] from ConvTranspose weight
// [cin, cg, kh, kw]: a group's phases are adjacent blocks of cg channels.
HostTensorPtr PhaseWeight(const HostTensor& w, int64_t group, const PhaseAxis& h,
                          const PhaseAxis& v) {
  const int64_t cin = w.type.shape[0], cg = w.type.shape[1];
  const int64_t kh = w.type.shape[2], kw = w.type.shape[3];
  const int64_t cin_g = cin / group, phases = h.stride * v.stride;
  auto out = std::make_shared<HostTensor>(
      TensorType{{group * phases * cg, cin_g, h.taps, v.taps}, w.type.dtype});
  const float* src = w.Data<float>();
  float* dst = out->Data<float>();
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t p = 0; p < phases; ++p) {
      for (int64_t co = 0; co < cg; ++co) {
        for (int64_t ci = 0; ci < cin_g; ++ci) {
          for (int64_t t = 0; t < h.taps; ++t) {
            for (int64_t u = 0; u < v.taps; ++u) {
              const int64_t y = h.KernelTap(p / v.stride, t), x = v.KernelTap(p % v.stride, u);
              const int64_t o = (((g * phases + p) * cg + co) * cin_g + ci) * h.taps + t;
              dst[o * v.taps + u] =
                  y < 0 || x < 0 ? 0.0f : src[(((g * cin_g + ci) * cg + co) * kh + y) * kw + x];
            }
          }
        }
      }
    }
  }
  return out;
}

// The bias repeated for every phase of each group.
HostTensorPtr PhaseBias(const HostTensor& b, int64_t group, int64_t phases) {
  const int64_t cg = b.NumElements() / group;
  auto out = std::make_shared<HostTensor>(TensorType{{b.NumElements() * phases}, b.type.dtype});
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = 0; i < phases * cg; ++i) {
      out->Data<float>()[g * phases * cg + i] = b.Data<float>()[g * cg + i % cg];
    }
  }
  return out;
}

bool Applies(const Node& n, const Graph& g) {
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  if (x.is_constant() || !w.is_constant() || x.type.ndim() != 4 || w.type.ndim() != 4 ||
      x.type.dtype != kFloat32 || w.type.dtype != kFloat32) {
    return false;
  }
  // Shapes the naive lowering would refuse keep it, and its error.
  const WindowAttrs win = WindowAttrs::Of(n, 2);
  const auto& ws = w.type.shape;
  if (win.group <= 0 || ws[0] != x.type.shape[1] || ws[0] % win.group != 0 ||
      win.kernel != std::vector<int64_t>{ws[2], ws[3]}) {
    return false;
  }
  if (n.HasInput(2)) {
    const Value& b = g.value(n.inputs[2]);
    if (!b.is_constant() || b.type.dtype != kFloat32 || b.type.NumElements() != ws[1] * win.group) {
      return false;
    }
  }
  for (int64_t p : win.pads) {
    if (p < 0) return false;
  }
  return true;
}

}  // namespace

bool EmitConvTransposeAsConv(const Node& n, RewriteContext* ctx) {
  Graph& graph = ctx->graph();
  if (!Applies(n, graph)) return false;
  const WindowAttrs win = WindowAttrs::Of(n, 2);
  const TensorType& x = graph.value(n.inputs[0]).type;
  const PhaseAxis h = Axis(win, x.shape[2], 0), v = Axis(win, x.shape[3], 1);
  const int64_t phases = h.stride * v.stride;
  std::vector<int> in{
      n.inputs[0], ctx->Constant(n.name + "_phase_weight",
                                 PhaseWeight(*graph.value(n.inputs[1]).constant, win.group, h, v))};
  if (n.HasInput(2)) {
    in.push_back(ctx->Constant(n.name + "_phase_bias",
                               PhaseBias(*graph.value(n.inputs[2]).constant, win.group, phases)));
  }
  // Stride 1: one phase, and the crop is a smaller conv pad (when the pads allow).
  const bool one_phase = phases == 1 && h.crop < h.taps && v.crop < v.taps &&
                         h.end_pad <= h.rows - h.in && v.end_pad <= v.rows - v.in;
  AttrMap conv{{"kernel_shape", std::vector<int64_t>{h.taps, v.taps}},
               {"strides", std::vector<int64_t>{1, 1}},
               {"dilations", std::vector<int64_t>{1, 1}},
               {"group", win.group}};
  if (one_phase) {
    conv["pads"] = std::vector<int64_t>{h.taps - 1 - h.crop, v.taps - 1 - v.crop,
                                        h.rows - h.in - h.end_pad, v.rows - v.in - v.end_pad};
    ctx->EmitInto(Node{"Conv", n.name, std::move(conv), std::move(in), n.outputs});
    return true;
  }
  conv["pads"] = std::vector<int64_t>{h.taps - 1, v.taps - 1, h.rows - h.in, v.rows - v.in};
  const int phased = ctx->Emit("Conv", n.name + "_phases", std::move(in), std::move(conv));
  AttrMap interleave{
      {"strides", std::vector<int64_t>{h.stride, v.stride}},
      {"crop", std::vector<int64_t>{h.crop, v.crop}},
      {"out_size", std::vector<int64_t>{h.full - h.crop - h.end_pad, v.full - v.crop - v.end_pad}},
      {"group", win.group}};
  ctx->EmitInto(Node{"PhaseInterleave", n.name, std::move(interleave), {phased}, n.outputs});
  return true;
}

}  // namespace compiler
}  // namespace ember
