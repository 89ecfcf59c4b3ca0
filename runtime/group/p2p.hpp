// The point-to-point interface every collective is written against. It knows ranks, tags and byte
// buffers, never which transport carries them (UCX, NCCL, ...). Operations are nonblocking: start, then
// test until done. Nothing here blocks.
#pragma once

#include <gradwire/types.h>

#include <cstdint>

namespace gw::comm {

class PointToPoint {
 public:
  struct Op;  // an operation in flight, owned by the implementation until free()

  virtual ~PointToPoint() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;

  // Tags are at most kTagBits wide. Throw gw::Error on a failure to start.
  virtual Op* send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) = 0;
  virtual Op* recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) = 0;
  // True when done (for a receive, *bytes is what arrived); false while in flight; throws gw::Error
  // when the operation failed (peer gone, truncated, aborted).
  virtual bool test(Op* op, uint64_t* bytes) = 0;
  // Releases an operation, cancelling it if it is still in flight.
  virtual void free(Op* op) noexcept = 0;
  virtual void progress() = 0;
  // Makes every pending and future operation fail. thread: any.
  virtual void abort() noexcept = 0;

  static constexpr unsigned kTagBits = 40;
};

}  // namespace gw::comm
