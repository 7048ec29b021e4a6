/*!
 * \file ember/runtime/device_api.h
 * \brief Per-device memory allocation and copies. This runtime ships the CPU device.
 */
#ifndef EMBER_RUNTIME_DEVICE_API_H_
#define EMBER_RUNTIME_DEVICE_API_H_

#include <dlpack/dlpack.h>
#include <ember/runtime/c_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ember::runtime {

/*!
 * \brief The machine's physical memory in bytes. CPU allocations above it are refused as
 * corrupt sizes before the allocator is asked (no giant allocation, no allocator abort).
 */
uint64_t PhysicalMemoryBytes();
/*! \brief The most memory one process can hold here: the physical memory, or on a 32-bit device
 *  the half of the address space an allocation may take, whichever is less. */
uint64_t ProcessMemoryBytes();

/*! \brief Memory and copies for one kind of device. */
class DeviceAPI {
 public:
  virtual ~DeviceAPI() = default;
  /*! \brief \p nbytes aligned to \p alignment (a power of two); throws on failure. */
  virtual void* AllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                               DLDataType type_hint) = 0;
  virtual void FreeDataSpace(DLDevice dev, void* ptr) = 0;
  /*!
   * \brief Copies \p nbytes from \p from + \p from_offset to \p to + \p to_offset; the devices say
   * where each side lives.
   */
  virtual void CopyDataFromTo(const void* from, size_t from_offset, void* to, size_t to_offset,
                              size_t nbytes, DLDevice dev_from, DLDevice dev_to,
                              TVMStreamHandle stream) = 0;
  virtual void StreamSync(DLDevice dev, TVMStreamHandle stream) = 0;

  /*! \brief The API for \p dev; throws naming the device when unsupported, or returns nullptr
   * when \p allow_missing. */
  static DeviceAPI* Get(DLDevice dev, bool allow_missing = false);
};

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_DEVICE_API_H_
