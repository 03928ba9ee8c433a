// loom_alloc / loom_free: the heap temporaries of compiled kernels, with a per-thread cache of
// recently freed large blocks. A kernel allocates the same temporaries on every call; without the
// cache each one past malloc's mmap threshold came back from the kernel as fresh zeroed pages
// (a page fault every 4 KiB, every call), which made a Winograd convolution several times slower at some
// map sizes and not others (docs/cpu_backend.md).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "loom/runtime/module.h"

namespace {

// What sits in front of every block: its size and alignment, to find a cached block that fits.
struct Header {
  uint64_t bytes;      // usable bytes after the header
  uint64_t alignment;  // of the pointer returned
  uint64_t offset;     // from the allocation's base to the returned pointer
};

constexpr uint64_t kCachedMin = uint64_t(64) << 10;        // smaller blocks come from malloc's own bins
constexpr uint64_t kCachedBytesMax = uint64_t(512) << 20;  // all threads together
constexpr size_t kCachedBlocksMax = 32;                    // per thread

// Bytes cached by every thread: the cap holds however many threads the pool has (checked and added
// in two steps: threads giving blocks at once may pass it by a block each). Pool threads keep their
// blocks after a model is freed, up to the cap.
std::atomic<uint64_t> g_cached{0};

Header* header_of(void* p) { return static_cast<Header*>(p) - 1; }
void* base_of(void* p) { return static_cast<char*>(p) - header_of(p)->offset; }

class BlockCache {
 public:
  ~BlockCache() {
    while (!blocks_.empty()) drop_oldest();
  }
  // A cached block of exactly `bytes` with `alignment` (a kernel asks for the same sizes every
  // call), else null.
  void* take(uint64_t bytes, uint64_t alignment) {
    for (size_t i = blocks_.size(); i-- > 0;) {
      Header* h = header_of(blocks_[i]);
      if (h->bytes == bytes && h->alignment == alignment) {
        void* p = blocks_[i];
        blocks_.erase(blocks_.begin() + long(i));
        g_cached -= bytes;
        return p;
      }
    }
    return nullptr;
  }
  // Keeps `p` for reuse: this thread's oldest blocks go back to malloc past the limits, and `p`
  // itself when the other threads' blocks fill the cap.
  void give(void* p) {
    uint64_t bytes = header_of(p)->bytes;
    while (!blocks_.empty() && (blocks_.size() >= kCachedBlocksMax || g_cached + bytes > kCachedBytesMax))
      drop_oldest();
    if (g_cached + bytes > kCachedBytesMax) {
      std::free(base_of(p));
      return;
    }
    blocks_.push_back(p);
    g_cached += bytes;
  }

 private:
  void drop_oldest() {
    g_cached -= header_of(blocks_.front())->bytes;
    std::free(base_of(blocks_.front()));
    blocks_.erase(blocks_.begin());
  }

  std::vector<void*> blocks_;  // oldest first
};

BlockCache& cache() {
  thread_local BlockCache c;
  return c;
}

}  // namespace

extern "C" void* loom_alloc(uint64_t nbytes, uint64_t alignment) {
  if (alignment < alignof(Header)) alignment = alignof(Header);
  if (alignment & (alignment - 1)) {
    loom_set_last_error("loom_alloc: alignment is not a power of two");
    return nullptr;
  }
  uint64_t rounded = (nbytes + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  if (rounded < nbytes || rounded > (uint64_t(1) << 62)) {
    loom_set_last_error("out of host memory");
    return nullptr;
  }
  if (rounded >= kCachedMin)
    if (void* p = cache().take(rounded, alignment)) return p;
  // The header in the alignment-sized slot in front of the block (at least a Header's size).
  uint64_t offset = (sizeof(Header) + alignment - 1) / alignment * alignment;
  void* base = std::aligned_alloc(alignment, rounded + offset);
  if (!base) {
    loom_set_last_error("out of host memory");
    return nullptr;
  }
  void* p = static_cast<char*>(base) + offset;
  *header_of(p) = Header{rounded, alignment, offset};
  return p;
}

extern "C" void loom_free(void* ptr) {
  if (!ptr) return;
  if (header_of(ptr)->bytes >= kCachedMin)
    cache().give(ptr);
  else
    std::free(base_of(ptr));
}
