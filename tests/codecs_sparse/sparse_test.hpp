// Helpers of the sparse codec tests: a codec from TOML, encode/decode of host vectors, payload surgery.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <gradwire/plugin.h>

#include "gw_test.hpp"

namespace gwsparse {

struct Codec {
  gwtest::Runtime runtime;
  gw_codec* codec = nullptr;
  Codec(const std::string& name, const std::string& toml) : runtime(toml) {
    EXPECT_EQ(gw_codec_create(runtime.rt, name.c_str(), &codec), GW_OK) << gw_last_error();
  }
  ~Codec() {
    if (codec) gw_codec_destroy(codec);
  }

  template <class T>
  std::vector<unsigned char> encode(const std::vector<T>& x, gw_dtype dtype = GW_DTYPE_F32, uint64_t seed = 0,
                                    uint64_t step = 0) {
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = const_cast<T*>(x.data());
    t.count = x.size();
    gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
    ctx.seed = seed;
    ctx.step = step;
    uint64_t cap = 0, size = 0;
    EXPECT_EQ(gw_codec_max_encoded_size(codec, dtype, x.size(), &cap), GW_OK) << gw_last_error();
    std::vector<unsigned char> payload(cap);
    EXPECT_EQ(gw_codec_encode(codec, &ctx, &t, payload.data(), cap, &size), GW_OK) << gw_last_error();
    payload.resize(size);
    return payload;
  }

  template <class T>
  gw_status decode(const std::vector<unsigned char>& payload, std::vector<T>& out, gw_dtype dtype = GW_DTYPE_F32,
                   uint32_t flags = 0) {
    gw_tensor t = GW_TENSOR_INIT;
    t.dtype = dtype;
    t.data = out.data();
    t.count = out.size();
    return gw_codec_decode(codec, nullptr, payload.data(), payload.size(), &t, flags);
  }
};

// The body of a payload, and a payload rebuilt around another body (header length updated).
inline std::vector<unsigned char> body_of(const std::vector<unsigned char>& payload) {
  return {payload.begin() + GW_WIRE_HEADER_SIZE, payload.end()};
}
inline std::vector<unsigned char> with_body(const std::vector<unsigned char>& payload,
                                            const std::vector<unsigned char>& body) {
  std::vector<unsigned char> p(payload.begin(), payload.begin() + GW_WIRE_HEADER_SIZE);
  const uint64_t length = body.size();
  std::memcpy(p.data() + 24, &length, 8);
  p.insert(p.end(), body.begin(), body.end());
  return p;
}

inline uint32_t le32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void put32(unsigned char* p, uint32_t v) { std::memcpy(p, &v, 4); }

}  // namespace gwsparse
