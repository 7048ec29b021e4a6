// The per-thread workspace pool behind TVMBackendAllocWorkspace / TVMBackendFreeWorkspace.
//
// Kernels take scratch memory on entry and give it back on exit, in stack order, on every call.
// Each thread keeps the blocks it was given: a free puts the block on a size-sorted free list and
// the next allocation takes the smallest free block that fits, so after the first run of a model
// no call reaches malloc. Blocks are 64-byte aligned and released when the thread exits.
#include <dlpack/dlpack.h>
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/device_api.h>
#include <ember/runtime/threading.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ember::runtime::threading {
namespace {

// Sizes round up to a cache line below one page and to whole pages above, so the slightly
// different sizes a model asks for still reuse each other's blocks.
constexpr size_t kSmallGranule = kWorkspaceAlignment;
constexpr size_t kPageGranule = 4096;
// Bookkeeping entries reserved up front: deeper nesting than this grows the vectors once.
constexpr size_t kInitialBlockSlots = 16;
static_assert((kWorkspaceAlignment & (kWorkspaceAlignment - 1)) == 0, "alignment: power of two");
static_assert(kPageGranule % kWorkspaceAlignment == 0, "pages keep the alignment");

size_t RoundUp(size_t n, size_t granule) { return (n + granule - 1) / granule * granule; }

class WorkspacePool {
 public:
  WorkspacePool() = default;
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  ~WorkspacePool() {
    for (const Block& b : in_use_) std::free(b.data);  // a kernel forgot to free: reclaim anyway
    for (const Block& b : free_) std::free(b.data);
  }

  // nbytes already checked against PhysicalMemoryBytes(); nullptr only when malloc fails.
  void* Alloc(size_t nbytes) {
    if (in_use_.capacity() == 0) {
      in_use_.reserve(kInitialBlockSlots);
      free_.reserve(kInitialBlockSlots);
      stats_.system_allocations += 2;
    }
    const size_t size =
        RoundUp(std::max<size_t>(nbytes, 1), nbytes < kPageGranule ? kSmallGranule : kPageGranule);
    Block block{nullptr, 0};
    auto fit = std::lower_bound(free_.begin(), free_.end(), size,
                                [](const Block& b, size_t want) { return b.size < want; });
    if (fit != free_.end()) {
      block = *fit;
      free_.erase(fit);
    } else {
      // Every free block is too small; keep the count bounded by dropping the largest of them.
      if (!free_.empty()) {
        stats_.bytes_reserved -= free_.back().size;
        std::free(free_.back().data);
        free_.pop_back();
      }
      void* data = nullptr;
      if (posix_memalign(&data, kWorkspaceAlignment, size) != 0) return nullptr;
      ++stats_.system_allocations;
      stats_.bytes_reserved += size;
      block = Block{data, size};
    }
    Push(&in_use_, block);
    return block.data;
  }

  bool Free(void* ptr) {
    // Stack order makes the block we want the last one almost always.
    for (size_t i = in_use_.size(); i-- > 0;) {
      if (in_use_[i].data != ptr) continue;
      Block block = in_use_[i];
      in_use_.erase(in_use_.begin() + static_cast<std::ptrdiff_t>(i));
      auto pos = std::upper_bound(free_.begin(), free_.end(), block.size,
                                  [](size_t want, const Block& b) { return want < b.size; });
      if (free_.size() == free_.capacity()) ++stats_.system_allocations;
      free_.insert(pos, block);
      return true;
    }
    return false;
  }

  WorkspaceStats Stats() const {
    WorkspaceStats stats = stats_;
    stats.blocks_in_use = in_use_.size();
    stats.blocks_free = free_.size();
    return stats;
  }

 private:
  struct Block {
    void* data;
    size_t size;
  };

  void Push(std::vector<Block>* blocks, Block block) {
    if (blocks->size() == blocks->capacity()) ++stats_.system_allocations;
    blocks->push_back(block);
  }

  std::vector<Block> in_use_;  // in allocation order
  std::vector<Block> free_;    // ascending size
  WorkspaceStats stats_;
};

WorkspacePool& ThreadWorkspace() {
  thread_local WorkspacePool pool;
  return pool;
}

void SetError(const std::string& msg) { TVMAPISetLastError(msg.c_str()); }

bool CheckDevice(const char* api, int device_type) {
  if (device_type == kDLCPU) return true;
  SetError(std::string(api) + ": device type " + std::to_string(device_type) +
           " has no workspace pool; this runtime provides CPU (device type 1) workspaces only");
  return false;
}

}  // namespace

WorkspaceStats GetWorkspaceStats() { return ThreadWorkspace().Stats(); }

}  // namespace ember::runtime::threading

extern "C" {

void* TVMBackendAllocWorkspace(int device_type, int /*device_id*/, uint64_t nbytes,
                               int /*dtype_code_hint*/, int /*dtype_bits_hint*/) {
  using namespace ember::runtime::threading;
  if (!CheckDevice("TVMBackendAllocWorkspace", device_type)) return nullptr;
  using ember::runtime::PhysicalMemoryBytes;
  if (nbytes > PhysicalMemoryBytes()) {
    SetError("TVMBackendAllocWorkspace: " + std::to_string(nbytes) +
             " bytes requested, more than this machine's physical memory (" +
             std::to_string(PhysicalMemoryBytes()) + " bytes); the kernel's sizes are corrupt");
    return nullptr;
  }
  void* ptr = ThreadWorkspace().Alloc(static_cast<size_t>(nbytes));
  if (ptr == nullptr) {
    SetError("TVMBackendAllocWorkspace: out of memory allocating " + std::to_string(nbytes) +
             " bytes");
  }
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int /*device_id*/, void* ptr) {
  using namespace ember::runtime::threading;
  if (!CheckDevice("TVMBackendFreeWorkspace", device_type)) return -1;
  if (ptr == nullptr) return 0;  // like free(NULL)
  if (ThreadWorkspace().Free(ptr)) return 0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", ptr);
  SetError(std::string("TVMBackendFreeWorkspace: ") + buf +
           " was not allocated by this thread's workspace pool (or was already freed)");
  return -1;
}

}  // extern "C"
