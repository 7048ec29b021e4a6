/*!
 * \file ember/runtime/npy.h
 * \brief Reading and writing NumPy .npy files (the tensors `ember-run` takes in and writes out).
 *
 * The .npy format, as this reader accepts it:
 *
 *   offset  size  content
 *   0       6     magic "\x93NUMPY"
 *   6       1     major version: 1, 2 or 3
 *   7       1     minor version (0)
 *   8       2|4   header length H, little-endian: uint16 for version 1, uint32 for versions 2 and 3
 *   10|12   H     a Python dict literal (ASCII for 1 and 2, UTF-8 for 3), padded with spaces and
 *                 ended by '\n': {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *   10+H    ...   the elements in C order, exactly prod(shape) * itemsize bytes
 *
 * `descr` is a byte order ('<' little, '|' not applicable, '=' native, '>' big) followed by a kind
 * and an item size: b1 (bool), i1 i2 i4 i8, u1 u2 u4 u8, f2 f4 f8, c8 c16. Big-endian data,
 * Fortran order (for two or more dimensions; a 1-d array is the same bytes either way), structured
 * or object dtypes are refused with a reason; so is any header that does
 * not parse, any shape whose byte size overflows, and any file whose data length disagrees with
 * the header. All of this is checked before the data buffer is allocated.
 *
 * The writer emits version 1.0 files (version 2.0 only when the header would not fit 65535 bytes)
 * with little-endian descrs; NumPy reads them with allow_pickle=False. Bool maps to DLPack
 * {kDLUInt, 1, 1} as in TVM ("bool" in graph.json); a 0-d array has shape ().
 */
#ifndef EMBER_RUNTIME_NPY_H_
#define EMBER_RUNTIME_NPY_H_

#include <dlpack/dlpack.h>
#include <ember/runtime/logging.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {
namespace runtime {

/*! \brief A .npy file that could not be read or written; the message names the file. */
class NpyError : public Error {
 public:
  using Error::Error;
};

/*! \brief What a .npy header says about the array that follows it. */
struct NpyHeader {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // where the elements start in the file
  uint64_t data_bytes = 0;   // prod(shape) * itemsize, overflow-checked
};

/*! \brief A whole .npy array in host memory. */
struct NpyArray {
  DLDataType dtype{kDLFloat, 32, 1};
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/*!
 * \brief Parses the header of a .npy file held in \p bytes (\p size bytes of it available).
 * \param source the file name used in error messages.
 * Does not check the data length; see CheckNpyDataSize.
 */
NpyHeader ParseNpyHeader(const uint8_t* bytes, size_t size, const std::string& source);

/*! \brief Fails unless \p file_size holds exactly the header plus the data it announces. */
void CheckNpyDataSize(const NpyHeader& header, uint64_t file_size, const std::string& source);

/*! \brief Parses a complete .npy file held in memory. */
NpyArray ParseNpy(const uint8_t* bytes, size_t size, const std::string& source);

/*!
 * \brief Reads and validates only the header of the .npy file at \p path (and that the file holds
 * exactly the data it announces), so a caller can check dtype and shape before reading any data.
 */
NpyHeader ReadNpyHeader(const std::string& path);

/*! \brief Reads a .npy file; header and size are validated before the data is allocated. */
NpyArray LoadNpy(const std::string& path);

/*!
 * \brief Reads a .npy file into memory provided by \p alloc, which is called once, after every
 * check passed, with the parsed header and returns a buffer of header.data_bytes bytes.
 */
template <typename Alloc>
void LoadNpyInto(const std::string& path, Alloc alloc);

/*! \brief The numpy descr of \p dtype ("<f4", "|b1", ...); throws NpyError when numpy has none. */
std::string NpyDescr(DLDataType dtype);

/*! \brief The bytes of a version 1.0 header (magic to newline) for \p dtype and \p shape. */
std::string SerializeNpyHeader(DLDataType dtype, const std::vector<int64_t>& shape);

/*!
 * \brief Writes \p nbytes of C-order data as a .npy file at \p path.
 * \p nbytes must equal prod(shape) * itemsize.
 */
void SaveNpy(const std::string& path, DLDataType dtype, const std::vector<int64_t>& shape,
             const void* data, size_t nbytes);

namespace detail {
/*! \brief Implementation of LoadNpyInto: \p alloc receives \p ctx and the header. */
void LoadNpyWith(const std::string& path, void* (*alloc)(void* ctx, const NpyHeader& header),
                 void* ctx);
}  // namespace detail

template <typename Alloc>
void LoadNpyInto(const std::string& path, Alloc alloc) {
  detail::LoadNpyWith(
      path,
      [](void* ctx, const NpyHeader& header) -> void* {
        return (*static_cast<Alloc*>(ctx))(header);
      },
      &alloc);
}

}  // namespace runtime
}  // namespace ember

#endif  // EMBER_RUNTIME_NPY_H_
