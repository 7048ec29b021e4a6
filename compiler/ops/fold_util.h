// What the host constant folds (OpDef::fold, the ops/*_fold.cc files) share: row-major index
// math and numpy broadcasting over HostTensors.
#ifndef EMBER_COMPILER_OPS_FOLD_UTIL_H_
#define EMBER_COMPILER_OPS_FOLD_UTIL_H_

#include <ember/compiler/ir/graph.h>

#include <cstring>
#include <vector>

namespace ember::compiler::ops {

using FoldInputs = std::vector<HostTensorPtr>;
using FoldOutputs = std::vector<HostTensorPtr>;
using FoldTypes = std::vector<TensorType>;

inline bool IsFloat(DLDataType d) { return d.code == kDLFloat; }

/*! \brief Row-major element strides of shape. */
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);
/*! \brief Coordinates of flat row-major index `flat` in shape. */
std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape);
/*! \brief Flat index into a tensor of in_shape, broadcast to out_shape, of output element flat. */
int64_t BroadcastIndex(int64_t flat, const std::vector<int64_t>& out_shape,
                       const std::vector<int64_t>& in_shape);

/*! \brief out[i] = in[src(i)], bytes moved as they are (any dtype). */
template <typename SrcFn>
void CopyElements(const HostTensor& in, HostTensor* out, SrcFn src) {
  const int64_t es = DTypeBytes(in.type.dtype);
  const int64_t total = out->NumElements();
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(out->data.data() + i * es, in.data.data() + src(i) * es, static_cast<size_t>(es));
  }
}

}  // namespace ember::compiler::ops

#endif  // EMBER_COMPILER_OPS_FOLD_UTIL_H_
