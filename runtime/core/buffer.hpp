// Large uninitialised byte buffers for payloads and scratch memory.
#pragma once

#include <cstdint>
#include <memory>

namespace gw {

struct BufferFree {
  void operator()(unsigned char* p) const noexcept;
};
using Buffer = std::unique_ptr<unsigned char[], BufferFree>;

// `bytes` bytes, uninitialised (at least one byte is allocated for 0). From 2 MiB up, the memory is aligned
// to 2 MiB and asked for transparent huge pages (madvise, where the kernel has them): a gradient exchange
// touches each of its buffers once per step, and with 4 KiB pages every step pays for thousands of pages
// — TLB misses, and on virtual machines whose host tracks idle guest memory by page, a fault of several
// microseconds on each page that rested between steps. Throws std::bad_alloc when memory runs out.
Buffer allocate_buffer(uint64_t bytes);

}  // namespace gw
