/*!
 * \file ember/runtime/data_type.h
 * \brief DLDataType to and from its text form ("float32", "int8", "bool", "float32x4", "handle").
 */
#ifndef EMBER_RUNTIME_DATA_TYPE_H_
#define EMBER_RUNTIME_DATA_TYPE_H_

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace ember::runtime {

/*!
 * \brief Parses a dtype name: int<bits>, uint<bits>, float<bits>, bfloat16, bool (= uint1),
 * handle (= 64-bit opaque), each optionally followed by x<lanes>. Throws Error naming the text and
 * the accepted forms on anything else.
 */
DLDataType StringToDLDataType(const std::string& s);

/*! \brief The canonical name: "float32", "bool", "int8x4", "handle". */
std::string DLDataTypeToString(DLDataType t);

/*! \brief Bytes one element occupies: (bits * lanes + 7) / 8. */
inline size_t DataTypeBytes(DLDataType t) {
  return (static_cast<size_t>(t.bits) * static_cast<size_t>(t.lanes) + 7) / 8;
}

/*! \brief Common dtypes as constants. */
constexpr DLDataType kFloat32 = {kDLFloat, 32, 1};
constexpr DLDataType kFloat16 = {kDLFloat, 16, 1};
constexpr DLDataType kFloat64 = {kDLFloat, 64, 1};
constexpr DLDataType kInt8 = {kDLInt, 8, 1};
constexpr DLDataType kInt32 = {kDLInt, 32, 1};
constexpr DLDataType kInt64 = {kDLInt, 64, 1};
constexpr DLDataType kUInt8 = {kDLUInt, 8, 1};
constexpr DLDataType kBool = {kDLUInt, 1, 1};
constexpr DLDevice kCPU = {kDLCPU, 0};

/*! \brief Names a device: "cpu(0)". */
std::string DeviceToString(DLDevice dev);

}  // namespace ember::runtime

// Comparing and printing dtypes and devices (global, where DLPack's types live, so ADL finds them).
inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }
inline bool operator==(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}
inline bool operator!=(DLDevice a, DLDevice b) { return !(a == b); }
inline std::ostream& operator<<(std::ostream& os, DLDataType t) {
  return os << ::ember::runtime::DLDataTypeToString(t);
}
inline std::ostream& operator<<(std::ostream& os, DLDevice d) {
  return os << ::ember::runtime::DeviceToString(d);
}

#endif  // EMBER_RUNTIME_DATA_TYPE_H_
