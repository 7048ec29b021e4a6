/*!
 * \file ember/compiler/ir/layout.h
 * \brief Channel-blocked tensor layouts: NCHW[x]c stores a 4-D NCHW tensor as [N][C/x][H][W][x],
 * so the x channels of one pixel are one SIMD vector. Conv nodes carry the layouts of their data
 * and output (kDataLayoutAttr, kOutLayoutAttr; absent = "NCHW"); LayoutTransform nodes convert.
 */
#ifndef EMBER_COMPILER_IR_LAYOUT_H_
#define EMBER_COMPILER_IR_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

constexpr const char* kDataLayoutAttr = "data_layout";
constexpr const char* kOutLayoutAttr = "out_layout";
/*! \brief Attributes of a LayoutTransform node: the layout it reads and the one it writes. */
constexpr const char* kSrcLayoutAttr = "src_layout";
constexpr const char* kDstLayoutAttr = "dst_layout";

/*! \brief Channel block of a layout name: "NCHW" -> 0, "NCHW16c" -> 16; -1 when the name is
 * neither. */
int64_t LayoutBlock(const std::string& layout);
/*! \brief "NCHW" for block 0, else "NCHW<block>c". */
std::string LayoutName(int64_t block);
/*! \brief Shape of an NCHW tensor stored blocked ([N][C/block][H][W][block]); block 0: as is. */
std::vector<int64_t> BlockedShape(const std::vector<int64_t>& nchw, int64_t block);
/*! \brief NCHW shape of a blocked 5-D shape. */
std::vector<int64_t> UnblockedShape(const std::vector<int64_t>& blocked);
/*! \brief The NCHW shape of a value whose shape is `stored` in `block` (0: NCHW as is); empty
 * when `stored` is not such a shape (or block < 0, an unknown layout). */
std::vector<int64_t> NchwShapeOf(const std::vector<int64_t>& stored, int64_t block);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_LAYOUT_H_
