// WindowAttrs: the one reader of kernel_shape, strides, dilations, pads, group and the pool flags.
#include <ember/compiler/ir/window_attrs.h>

#include "shape_util.h"

namespace ember {
namespace compiler {

bool WindowAttrs::Read(const Node& n, size_t spatial, const std::vector<int64_t>& kernel_default,
                       WindowAttrs* out, std::string* why) {
  WindowAttrs w;
  if (!n.HasAttr("kernel_shape") && kernel_default.empty()) {
    *why = "kernel_shape is required";
    return false;
  }
  w.kernel = n.GetInts("kernel_shape", kernel_default);
  w.strides = n.GetInts("strides", std::vector<int64_t>(spatial, 1));
  w.dilations = n.GetInts("dilations", std::vector<int64_t>(spatial, 1));
  w.pads = n.GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  w.output_padding = n.GetInts("output_padding", std::vector<int64_t>(spatial, 0));
  w.group = n.GetInt("group", 1);
  w.ceil_mode = n.GetInt("ceil_mode", 0) != 0;
  w.count_include_pad = n.GetInt("count_include_pad", 0) != 0;
  const std::string auto_pad = n.GetString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !n.HasAttr("pads")) {
    *why = "auto_pad " + auto_pad + " must be resolved by the frontend";
    return false;
  }
  if (w.kernel.size() != spatial || w.strides.size() != spatial || w.dilations.size() != spatial ||
      w.pads.size() != 2 * spatial || w.output_padding.size() != spatial) {
    *why = "kernel_shape/strides/dilations/pads do not match " + std::to_string(spatial) +
           " spatial dims";
    return false;
  }
  *out = std::move(w);
  return true;
}

WindowAttrs WindowAttrs::Of(const Node& n, size_t spatial,
                            const std::vector<int64_t>& kernel_default) {
  WindowAttrs w;
  std::string why;
  if (!Read(n, spatial, kernel_default, &w, &why)) NodeError(n, why);
  return w;
}

bool WindowAttrs::Undilated() const {
  for (int64_t d : dilations) {
    if (d != 1) return false;
  }
  return true;
}

}  // namespace compiler
}  // namespace ember
