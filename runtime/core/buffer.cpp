#include "core/buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace gw {

void BufferFree::operator()(unsigned char* p) const noexcept { std::free(p); }

Buffer allocate_buffer(uint64_t bytes) {
  constexpr uint64_t kHuge = uint64_t(2) << 20;
  void* p = nullptr;
  if (bytes < kHuge) {
    p = std::malloc(bytes > 0 ? bytes : 1);
  } else {
    const uint64_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;  // aligned_alloc wants a multiple
    p = std::aligned_alloc(kHuge, rounded);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without huge pages it is plain memory
#endif
  }
  if (!p) throw std::bad_alloc();
  return Buffer(static_cast<unsigned char*>(p));
}

}  // namespace gw
