// The header of one array in TVM's NDArray byte format (params.bin and NDArray::Save), read and
// checked in one place for the two ways the runtime loads arrays (whole, or chunked from a
// mapped params file whose pages are released as they are copied).
#ifndef EMBER_RUNTIME_NDARRAY_HEADER_H_
#define EMBER_RUNTIME_NDARRAY_HEADER_H_

#include <ember/runtime/byte_stream.h>
#include <ember/runtime/ndarray.h>

namespace ember {
namespace runtime {

/*! \brief The first u64 of a params file (TVM's save_param_dict), read by the loader and the
 * factory's mapped reader, written by SaveParams. */
constexpr uint64_t kParamsListMagic = 0xF7E58D4F05049CB7ULL;

/*!
 * \brief Reads an array's header from r (magic, device, ndim, dtype, shape, byte size), checks
 * every field, the byte size against the shape (without overflow) and against the bytes left in
 * r, and returns an empty CPU array of that shape and dtype for the caller to fill with the next
 * arr.NumBytes() bytes of r. Throws naming r's source on any mismatch, before allocating.
 */
NDArray ReadArrayHeader(ByteReader* r);

}  // namespace runtime
}  // namespace ember

#endif  // EMBER_RUNTIME_NDARRAY_HEADER_H_
