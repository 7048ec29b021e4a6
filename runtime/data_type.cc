// Text forms of DLDataType, as graph.json's "dltype" attribute and error messages spell them.
#include <ember/runtime/data_type.h>
#include <ember/runtime/logging.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ember::runtime {
namespace {

[[noreturn]] void ThrowBadDType(const std::string& s) {
  EMBER_LOG_FATAL << "unknown data type \"" << s
                  << "\"; expected int8/16/32/64, uint1/8/16/32/64, float16/32/64, bfloat16, "
                     "bool or handle, optionally with lanes as in float32x4";
}

// Parses a decimal in [1, max]; false on anything else (empty, sign, overflow, trailing text).
bool ParseSmallUnsigned(const char* begin, const char* end, unsigned max, unsigned* out) {
  if (begin == end || end - begin > 5) return false;
  unsigned v = 0;
  for (const char* p = begin; p != end; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + static_cast<unsigned>(*p - '0');
  }
  if (v == 0 || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

DLDataType StringToDLDataType(const std::string& s) {
  DLDataType t{kDLFloat, 32, 1};
  const char* p = s.c_str();
  const char* end = p + s.size();
  // Lanes suffix: "float32x4".
  const char* x = std::strchr(p, 'x');
  const char* type_end = end;
  if (x != nullptr) {
    unsigned lanes = 0;
    if (!ParseSmallUnsigned(x + 1, end, 65535, &lanes)) ThrowBadDType(s);
    t.lanes = static_cast<uint16_t>(lanes);
    type_end = x;
  }
  std::string base(p, type_end);
  if (base == "bool") {
    t.code = kDLUInt;
    t.bits = 1;
    return t;
  }
  if (base == "handle") {
    t.code = kDLOpaqueHandle;
    t.bits = 64;
    return t;
  }
  const char* digits = nullptr;
  if (base.rfind("uint", 0) == 0) {
    t.code = kDLUInt;
    digits = base.c_str() + 4;
  } else if (base.rfind("int", 0) == 0) {
    t.code = kDLInt;
    digits = base.c_str() + 3;
  } else if (base.rfind("bfloat", 0) == 0) {
    t.code = kDLBfloat;
    digits = base.c_str() + 6;
  } else if (base.rfind("float", 0) == 0) {
    t.code = kDLFloat;
    digits = base.c_str() + 5;
  } else {
    ThrowBadDType(s);
  }
  unsigned bits = 0;
  if (!ParseSmallUnsigned(digits, base.c_str() + base.size(), 255, &bits)) ThrowBadDType(s);
  bool valid = false;
  switch (t.code) {
    case kDLInt:
      valid = bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 4;
      break;
    case kDLUInt:
      valid = bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 4;
      break;
    case kDLFloat:
      valid = bits == 16 || bits == 32 || bits == 64;
      break;
    case kDLBfloat:
      valid = bits == 16;
      break;
    default:
      break;
  }
  if (!valid) ThrowBadDType(s);
  t.bits = static_cast<uint8_t>(bits);
  return t;
}

std::string DLDataTypeToString(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 1 && t.lanes == 1) return "bool";
  if (t.code == kDLOpaqueHandle && t.bits == 64 && t.lanes == 1) return "handle";
  std::string out;
  switch (t.code) {
    case kDLInt:
      out = "int";
      break;
    case kDLUInt:
      out = "uint";
      break;
    case kDLFloat:
      out = "float";
      break;
    case kDLBfloat:
      out = "bfloat";
      break;
    case kDLOpaqueHandle:
      out = "handle";
      break;
    default:
      out = "code" + std::to_string(t.code) + "_";
      break;
  }
  out += std::to_string(t.bits);
  if (t.lanes != 1) out += "x" + std::to_string(t.lanes);
  return out;
}

std::string DeviceToString(DLDevice dev) {
  const char* name = "device";
  switch (dev.device_type) {
    case kDLCPU:
      name = "cpu";
      break;
    case kDLCUDA:
      name = "cuda";
      break;
    case kDLOpenCL:
      name = "opencl";
      break;
    case kDLVulkan:
      name = "vulkan";
      break;
    case kDLMetal:
      name = "metal";
      break;
    case kDLROCM:
      name = "rocm";
      break;
    default:
      return "device" + std::to_string(static_cast<int>(dev.device_type)) + "(" +
             std::to_string(dev.device_id) + ")";
  }
  return std::string(name) + "(" + std::to_string(dev.device_id) + ")";
}

}  // namespace ember::runtime
