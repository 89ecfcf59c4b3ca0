// gw_cache_* of the C ABI (docs/cache.md).
#include <gradwire/gradwire.h>

#include "cache/cache.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"

namespace {

gw::cache::Cache& get(gw_cache* cache) {
  gw::require(cache, "cache");
  return *cache->impl;
}

}  // namespace

extern "C" {

GW_API gw_status gw_cache_create(gw_comm* comm, const gw_cache_options* options, gw_cache** cache) {
  return gw::guard([&] {
    gw::require(cache, "cache (output)");
    *cache = nullptr;
    gw::require(comm, "comm");
    const gw_cache_options o = gw::abi::read(options, "options");
    auto c = std::make_unique<gw_cache>();
    c->impl = std::make_unique<gw::cache::Cache>(*comm->impl, o);
    *cache = c.release();
    return GW_OK;
  });
}

GW_API gw_status gw_cache_shard(gw_cache* cache, uint64_t* first, uint64_t* count) {
  return gw::guard([&] {
    auto& c = get(cache);
    if (first) *first = c.first();
    if (count) *count = c.count();
    return GW_OK;
  });
}

GW_API gw_status gw_cache_get(gw_cache* cache, const uint64_t* indices, uint64_t n, void* out) {
  return gw::guard([&] {
    get(cache).get(indices, n, out);
    return GW_OK;
  });
}

GW_API gw_status gw_cache_get_stats(gw_cache* cache, gw_cache_stats* stats) {
  return gw::guard([&] {
    auto& c = get(cache);
    gw::abi::write(stats, c.stats(), "stats");
    return GW_OK;
  });
}

GW_API gw_status gw_cache_destroy(gw_cache* cache) {
  return gw::guard([&] {
    gw::require(cache, "cache");
    delete cache;
    return GW_OK;
  });
}

}  // extern "C"
