/*!
 * \file ember/compiler/ir/window_attrs.h
 * \brief The sliding-window attributes of Conv, ConvTranspose and the pools, read and defaulted
 *  in one place: shape rules, compute rules, schedules and passes all see the same values.
 */
#ifndef EMBER_COMPILER_IR_WINDOW_ATTRS_H_
#define EMBER_COMPILER_IR_WINDOW_ATTRS_H_

#include <ember/compiler/ir/graph.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

struct WindowAttrs {
  std::vector<int64_t> kernel;          // kernel_shape
  std::vector<int64_t> strides;         // default 1 per axis
  std::vector<int64_t> dilations;       // default 1 per axis
  std::vector<int64_t> pads;            // begins then ends; default 0
  std::vector<int64_t> output_padding;  // ConvTranspose; default 0 per axis
  int64_t group = 1;                    // Conv, ConvTranspose
  bool ceil_mode = false;               // pools
  bool count_include_pad = false;       // AveragePool

  /*!
   * \brief The attributes of `node` for `spatial` spatial axes, defaults filled; kernel_shape
   * defaults to `kernel_default` (a conv's weight dims; empty: required). False, with the reason
   * in *why, when a list has the wrong length, kernel_shape is missing, or auto_pad asks for
   * padding the frontend has not resolved into pads.
   */
  static bool Read(const Node& node, size_t spatial, const std::vector<int64_t>& kernel_default,
                   WindowAttrs* out, std::string* why);
  /*! \brief Read, throwing a CompileError that names the node instead of returning false. */
  static WindowAttrs Of(const Node& node, size_t spatial,
                        const std::vector<int64_t>& kernel_default = {});

  /*! \brief True when every dilation is 1. */
  bool Undilated() const;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_WINDOW_ATTRS_H_
