// A transport's native collectives (gw_transport_vtable allreduce_start, ...): the runtime hands an
// uncompressed collective to the transport when the transport offers it and accepts the tensors' memory
// kind (memory_kinds), instead of running its own algorithm over point-to-point messages. NCCL's
// collectives on device buffers are the reason; any transport may offer them on host memory too.
#pragma once

#include <gradwire/types.h>

#include "comm/communicator.hpp"

namespace gw::comm {

// One uncompressed collective as the C ABI received it (tensors already validated).
struct NativeCall {
  CollectiveKind kind = CollectiveKind::Allreduce;
  const gw_tensor* in = nullptr;  // allreduce, allgather, reduce_scatter
  gw_tensor* out = nullptr;       // the result; broadcast: the buffer
  gw_reduce_op op = GW_REDUCE_SUM;
  uint32_t root = 0;
};

// Starts the call on the transport's native collective when it has one for this kind and its
// memory_kinds include the tensors' memory; nullptr when it does not and the tensors are host memory
// (the runtime's own algorithms then run). Throws GW_ERR_UNSUPPORTED naming the transport, the memory
// kind and what to do when the tensors are not host memory and the transport cannot take them natively.
gw_request* start_native(Communicator& comm, const NativeCall& call);

// Point-to-point messages of the runtime's own algorithms: host memory that the transport must accept.
// Throws GW_ERR_UNSUPPORTED naming the memory kind and the transport's memory_kinds otherwise.
void require_p2p_memory(Communicator& comm, const gw_tensor& t, const char* what);

// "host", "cuda", "host|cuda": a memory_kinds mask as text.
std::string memory_kinds_text(uint32_t kinds);

}  // namespace gw::comm
