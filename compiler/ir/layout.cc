// Channel-blocked layout names and shapes (see ember/compiler/ir/layout.h).
#include <ember/compiler/ir/layout.h>

#include <cctype>

namespace ember {
namespace compiler {

int64_t LayoutBlock(const std::string& layout) {
  if (layout == "NCHW") return 0;
  const std::string head = "NCHW";
  if (layout.size() < head.size() + 2 || layout.compare(0, head.size(), head) != 0 ||
      layout.back() != 'c') {
    return -1;
  }
  int64_t block = 0;
  for (size_t i = head.size(); i + 1 < layout.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(layout[i])) || block > (1 << 20)) return -1;
    block = block * 10 + (layout[i] - '0');
  }
  return block > 0 ? block : -1;
}

std::string LayoutName(int64_t block) {
  return block == 0 ? "NCHW" : "NCHW" + std::to_string(block) + "c";
}

std::vector<int64_t> BlockedShape(const std::vector<int64_t>& nchw, int64_t block) {
  if (block == 0) return nchw;
  return {nchw[0], nchw[1] / block, nchw[2], nchw[3], block};
}

std::vector<int64_t> UnblockedShape(const std::vector<int64_t>& blocked) {
  return {blocked[0], blocked[1] * blocked[4], blocked[2], blocked[3]};
}

std::vector<int64_t> NchwShapeOf(const std::vector<int64_t>& stored, int64_t block) {
  if (block == 0) return stored;
  if (block < 0 || stored.size() != 5 || stored[4] != block) return {};
  return UnblockedShape(stored);
}

}  // namespace compiler
}  // namespace ember
