// gw_sync_* of the C ABI. Every call holds the synchronizer's lock, which its background progress
// thread takes too.
#include <gradwire/gradwire.h>

#include <cstring>

#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "comm/elastic.hpp"
#include "instance/runtime.hpp"
#include "sync/synchronizer.hpp"

namespace {

using gw::sync::Synchronizer;

// Runs body(impl) under the synchronizer's lock.
template <class F>
gw_status locked(gw_sync* sync, F&& body) {
  return gw::guard([&] {
    gw::require(sync, "sync");
    Synchronizer& s = *sync->impl;
    gw_status st;
    bool wake = false;
    {
      std::lock_guard lock(s.mutex());
      st = body(s);
      wake = s.wants_progress();
    }
    if (wake) s.notify();
    return st;
  });
}

}  // namespace

extern "C" {

GW_API gw_status gw_sync_create(gw_comm* comm, const gw_sync_options* options, gw_sync** sync) {
  return gw::guard([&] {
    gw::require(sync, "sync (output)");
    *sync = nullptr;
    gw::require(comm, "comm");
    const gw_sync_options o = gw::abi::read(options, "options");
    options = &o;
    if (options->runtime == nullptr)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "options->runtime is NULL; the synchronizer reads its codec, schedule, "
                                        "buckets and rules from the runtime's configuration");
    if (options->flags != 0) gw::fail(GW_ERR_INVALID_ARGUMENT, "options->flags is reserved; pass 0");
    auto s = std::make_unique<gw_sync>();
    s->impl = std::make_unique<Synchronizer>(*comm->impl, options->runtime->impl);
    s->impl->set_elastic(comm->elastic != nullptr);
    if (comm->elastic && comm->elastic->joined) s->impl->set_joined();
    s->comm = comm;
    *sync = s.release();
    return GW_OK;
  });
}

GW_API gw_status gw_sync_destroy(gw_sync* sync) {
  return gw::guard([&] {
    gw::require(sync, "sync");
    delete sync;
    return GW_OK;
  });
}

GW_API gw_status gw_sync_register(gw_sync* sync, const char* name, const gw_tensor* gradient,
                                  const gw_tensor* parameter) {
  return locked(sync, [&](Synchronizer& s) {
    gw::require(name, "name");
    const std::string tensor = std::string("tensor '") + name + "': the ";
    const gw_tensor g = gw::read_tensor(gradient, tensor + "gradient");
    gw_tensor p{};
    if (parameter) p = gw::read_tensor(parameter, tensor + "parameter");
    s.register_tensor(name, g, parameter ? &p : nullptr);
    return GW_OK;
  });
}

GW_API gw_status gw_sync_register_shape(gw_sync* sync, const char* name, uint32_t ndim, const int64_t* dims) {
  return locked(sync, [&](Synchronizer& s) {
    gw::require(name, "name");
    if (ndim > 0) gw::require(dims, "dims");
    s.register_shape(name, std::vector<int64_t>(dims, dims + ndim));
    return GW_OK;
  });
}

GW_API gw_status gw_sync_finalize(gw_sync* sync) {
  return locked(sync, [&](Synchronizer& s) {
    s.finalize();
    return GW_OK;
  });
}

GW_API gw_status gw_sync_bucket_count(gw_sync* sync, uint32_t* count) {
  return locked(sync, [&](Synchronizer& s) {
    gw::require(count, "count (output)");
    *count = s.bucket_count();
    return GW_OK;
  });
}

GW_API gw_status gw_sync_get_bucket_info(gw_sync* sync, uint32_t bucket, gw_sync_bucket_info* info) {
  return locked(sync, [&](Synchronizer& s) {
    gw::abi::write(info, s.bucket_info(bucket), "info");
    return GW_OK;
  });
}

GW_API gw_status gw_sync_tensor_bucket(gw_sync* sync, const char* name, uint32_t* bucket) {
  return locked(sync, [&](Synchronizer& s) {
    gw::require(name, "name");
    gw::require(bucket, "bucket (output)");
    *bucket = s.tensor_bucket(name);
    return GW_OK;
  });
}

GW_API gw_status gw_sync_bucket_ready(gw_sync* sync, uint32_t bucket) {
  return locked(sync, [&](Synchronizer& s) {
    s.bucket_ready(bucket);
    return GW_OK;
  });
}

GW_API gw_status gw_sync_step(gw_sync* sync, uint32_t* flags) {
  return locked(sync, [&](Synchronizer& s) {
    if (!s.elastic()) {
      const uint32_t f = s.step();
      if (flags) *flags = f;
      return GW_OK;
    }
    // Elastic mode (docs/elastic.md): a step that failed because ranks are gone or silent is recovered.
    sync->comm->elastic->listener->refuse_waiting(sync->comm->elastic->epoch);
    s.snapshot();
    try {
      // Joiners are admitted at the step boundary: the step has not started; it is redone with them.
      if (s.admit(*sync->comm)) {
        if (flags) *flags = 0;
        return GW_MEMBERSHIP_CHANGED;
      }
      const uint32_t f = s.step();
      if (flags) *flags = f;
      return GW_OK;
    } catch (const gw::Error& e) {
      if (e.status() != GW_ERR_TRANSPORT && e.status() != GW_ERR_TIMEOUT) throw;
      s.recover(*sync->comm, e.status(), e.what());
      if (flags) *flags = 0;
      return GW_MEMBERSHIP_CHANGED;
    }
  });
}

GW_API gw_status gw_sync_skip_step(gw_sync* sync) {
  return locked(sync, [&](Synchronizer& s) {
    s.skip_step();
    return GW_OK;
  });
}

GW_API gw_status gw_sync_save_state(gw_sync* sync, void* buf, uint64_t capacity, uint64_t* size) {
  return locked(sync, [&](Synchronizer& s) {
    gw::require(size, "size (output)");
    const std::vector<unsigned char> blob = s.save_state();
    *size = blob.size();
    if (buf == nullptr) return GW_OK;
    if (capacity < blob.size())
      gw::fail(GW_ERR_BUFFER_TOO_SMALL, "the synchronizer state needs " + std::to_string(blob.size()) +
                                            " bytes, the buffer holds " + std::to_string(capacity) +
                                            "; ask for the size with buf NULL first");
    std::memcpy(buf, blob.data(), blob.size());
    return GW_OK;
  });
}

GW_API gw_status gw_sync_load_state(gw_sync* sync, const void* buf, uint64_t size) {
  return locked(sync, [&](Synchronizer& s) {
    s.load_state(static_cast<const unsigned char*>(buf), size);
    return GW_OK;
  });
}

GW_API gw_status gw_sync_get_stats(gw_sync* sync, uint32_t bucket, gw_sync_stats* stats) {
  return locked(sync, [&](Synchronizer& s) {
    gw::abi::write(stats, s.stats(bucket), "stats");
    return GW_OK;
  });
}

}  // extern "C"
