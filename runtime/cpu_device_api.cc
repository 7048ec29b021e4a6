// The CPU device: aligned host memory and memcpy.
#include <ember/runtime/data_type.h>
#include <ember/runtime/device_api.h>
#include <ember/runtime/logging.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace ember::runtime {

uint64_t PhysicalMemoryBytes() {
  // Requests above the machine's physical memory are bugs (or corrupt shapes), not workloads.
  static const uint64_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return static_cast<uint64_t>(SIZE_MAX / 2);
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }();
  return bytes;
}

uint64_t ProcessMemoryBytes() {
  return std::min<uint64_t>(PhysicalMemoryBytes(), std::numeric_limits<size_t>::max() / 2);
}

namespace {

// Arrays this large are params and activation storage, every byte of which is written soon.
// Faulting their pages in with one call costs 30-55% less than a fault per 4 KiB page on first
// touch (57-95 -> 38-43 ms per 100 MB on an Intel VM; more where page faults are dearer), and it
// moves the cost from the first inference to the load.
constexpr size_t kPopulateBytes = size_t{1} << 20;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it with EINVAL, which is fine
#endif

void PopulatePages(void* ptr, size_t nbytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(ptr) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + nbytes) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

class CPUDeviceAPI final : public DeviceAPI {
 public:
  void* AllocDataSpace(DLDevice, size_t nbytes, size_t alignment, DLDataType) final {
    EMBER_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0)
        << "alignment " << alignment << " is not a power of two";
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    EMBER_CHECK(nbytes <= PhysicalMemoryBytes())
        << "cannot allocate " << nbytes << " bytes on cpu: more than this machine's "
        << PhysicalMemoryBytes() << " bytes of memory (corrupt shape or size?)";
    // A zero-byte array still gets a distinct, valid pointer.
    if (nbytes == 0) nbytes = alignment;
    void* ptr = nullptr;
    int rc = posix_memalign(&ptr, alignment, nbytes);
    EMBER_CHECK(rc == 0 && ptr != nullptr)
        << "out of memory allocating " << nbytes << " bytes on cpu (alignment " << alignment << ")";
    if (nbytes >= kPopulateBytes) PopulatePages(ptr, nbytes);
    return ptr;
  }

  void FreeDataSpace(DLDevice, void* ptr) final { std::free(ptr); }

  void CopyDataFromTo(const void* from, size_t from_offset, void* to, size_t to_offset,
                      size_t nbytes, DLDevice dev_from, DLDevice dev_to, TVMStreamHandle) final {
    EMBER_CHECK(dev_from.device_type == kDLCPU && dev_to.device_type == kDLCPU)
        << "copy from " << dev_from << " to " << dev_to << ": only cpu is supported";
    if (nbytes == 0) return;
    std::memcpy(static_cast<char*>(to) + to_offset, static_cast<const char*>(from) + from_offset,
                nbytes);
  }

  void StreamSync(DLDevice, TVMStreamHandle) final {}
};

}  // namespace

DeviceAPI* DeviceAPI::Get(DLDevice dev, bool allow_missing) {
  // Leaked on purpose: arrays freed by late static destructors still reach it.
  static CPUDeviceAPI* cpu = new CPUDeviceAPI();
  if (dev.device_type == kDLCPU || dev.device_type == kDLCUDAHost) return cpu;
  if (allow_missing) return nullptr;
  EMBER_LOG_FATAL << "device " << dev << " is not supported: this runtime is built for cpu only";
}

}  // namespace ember::runtime
