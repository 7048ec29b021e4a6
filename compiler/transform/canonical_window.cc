// Canonical forms of the sliding-window ops (Conv, ConvTranspose, MaxPool, AveragePool, LpPool):
// kernel_shape, strides, dilations and explicit pads always present, auto_pad resolved against
// the input shape, and ConvTranspose's output_shape turned into pads and output_padding; a 2-D
// ConvTranspose with constant weights then becomes a Conv (conv_transpose_as_conv.h).
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/conv_transpose_as_conv.h"

namespace ember {
namespace compiler {
namespace {

std::vector<int64_t> Fill(size_t n, int64_t v) { return std::vector<int64_t>(n, v); }

void Window(Node& n, bool transpose, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs[0]);
  if (x.ndim() < 3) NodeError(n, "expected input of rank >= 3, got " + x.ToString());
  size_t sp = static_cast<size_t>(x.ndim() - 2);
  if (!n.HasAttr("kernel_shape")) {
    if (n.inputs.size() < 2) NodeError(n, "missing attribute 'kernel_shape'");
    const auto& w = ctx->TypeOf(n.inputs[1]).shape;
    n.attrs["kernel_shape"] = std::vector<int64_t>(w.begin() + 2, w.end());
  }
  auto k = n.GetInts("kernel_shape");
  auto s = n.GetInts("strides", Fill(sp, 1));
  auto d = n.GetInts("dilations", Fill(sp, 1));
  if (k.size() != sp || s.size() != sp || d.size() != sp) {
    NodeError(n, "kernel_shape/strides/dilations must have " + std::to_string(sp) + " entries");
  }
  std::string ap = n.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = n.GetInts("pads", Fill(2 * sp, 0));
  if (pads.size() != 2 * sp) NodeError(n, "pads must have " + std::to_string(2 * sp) + " entries");
  std::vector<int64_t> outpad = n.GetInts("output_padding", Fill(sp, 0));
  if (ap == "VALID") {
    pads = Fill(2 * sp, 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = x.shape[2 + i];
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total;
      if (transpose) {
        int64_t out = in * s[i];
        total = std::max<int64_t>(0, s[i] * (in - 1) + outpad[i] + eff - out);
      } else {
        int64_t out = CeilDiv(in, s[i]);
        total = std::max<int64_t>(0, (out - 1) * s[i] + eff - in);
      }
      int64_t small = total / 2, big = total - small;
      bool upper = ap == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[sp + i] = upper ? big : small;
    }
  } else if (ap != "NOTSET") {
    NodeError(n, "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '" + ap + "'");
  }
  if (transpose && n.HasAttr("output_shape")) {
    auto os = n.GetInts("output_shape");
    if (os.size() == sp + 2) os.erase(os.begin(), os.begin() + 2);
    for (size_t i = 0; i < sp; ++i) {
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total = s[i] * (x.shape[2 + i] - 1) + outpad[i] + eff - os.at(i);
      if (total < 0) {
        outpad[i] -= total;
        total = 0;
      }
      bool upper = ap != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[sp + i] = total - pads[i];
    }
    n.attrs.erase("output_shape");
  }
  n.attrs.erase("auto_pad");
  n.attrs["strides"] = s;
  n.attrs["dilations"] = d;
  n.attrs["pads"] = pads;
  if (transpose) n.attrs["output_padding"] = outpad;
}

void ConvOp(Node n, CanonicalizeContext* ctx) {
  Window(n, false, ctx);
  n.attrs["group"] = n.GetInt("group", 1);
  ctx->EmitInto(std::move(n));
}

void ConvTransposeOp(Node n, CanonicalizeContext* ctx) {
  Window(n, true, ctx);
  n.attrs["group"] = n.GetInt("group", 1);
  if (EmitConvTransposeAsConv(n, ctx)) return;
  ctx->EmitInto(std::move(n));
}

void PoolOp(Node n, CanonicalizeContext* ctx) {
  Window(n, false, ctx);
  n.attrs["ceil_mode"] = n.GetInt("ceil_mode", 0);
  ctx->EmitInto(std::move(n));
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Conv", ConvOp);
EMBER_REGISTER_OP_CANONICALIZE("ConvTranspose", ConvTransposeOp);
EMBER_REGISTER_OP_CANONICALIZE("MaxPool", PoolOp);
EMBER_REGISTER_OP_CANONICALIZE("AveragePool", PoolOp);
EMBER_REGISTER_OP_CANONICALIZE("LpPool", PoolOp);

}  // namespace compiler
}  // namespace ember
