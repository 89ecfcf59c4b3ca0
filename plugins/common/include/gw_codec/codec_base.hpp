// gw_codec/codec_base.hpp — the C++ boilerplate of a codec plugin's vtable.
//
// A codec is written as a C++ class; this header turns it into a gw_codec_vtable whose functions
// catch every exception and report it through gw_host.set_error with a gw_status, so nothing C++
// crosses the plugin boundary. API:
//
//   gwc::fail(status, message)          throws gwc::Error; use it for every refused input
//   gwc::corrupt(message)               fail(GW_ERR_CORRUPT, "corrupt <codec> payload: " ...)
//   gwc::guard(host, fn)                runs fn(), maps exceptions to a status + set_error
//   gwc::ConfigReader                   typed getters (bool, int, float, string) over gw_host's
//                                       config functions; each throws
//                                       GW_ERR_CONFIG naming the key when the host refuses
//   gwc::CodecBase                      base class: host(), name(); subclasses implement
//        gw_codec_properties properties() const
//        void max_encoded_size(gw_dtype, uint64_t count, uint64_t* body, uint64_t* workspace) const
//        uint64_t encode(const gw_codec_context&, const gw_tensor& in, void* body, uint64_t capacity)
//        void decode(const gw_codec_context&, const void* body, uint64_t size, gw_tensor& out,
//                    uint32_t flags)
//   gwc::make_codec_vtable<C>()         a gw_codec_vtable for class C constructible as
//                                       C(const gw_host*, gwc::ConfigReader&)
//   gwc::check_tensor(t, dtypes, what)  refuses NULL data with count > 0, unknown dtypes and memory
//   CodecBase::check_dtype(dtype)       refuses a dtype outside kDenseDtypes (max_encoded_size)
//   gwc::kDenseDtypes                   f32 | f16 | bf16, the dtypes every codec here accepts
//   gwc::dtype_size(dtype)              bytes per element of f32/f16/bf16 (0 otherwise)
//   gwc::check_capacity(c, need, capacity, body)   GW_ERR_BUFFER_TOO_SMALL when need > capacity
//   gwc::refuse_cuda / fail_cuda / require_cuda_alignment   the CUDA side's refusals and failures
//   GW_CODEC_CUDA_OPS(expr)             expr in a plugin built with its CUDA kernels, else nullptr
//   gwc::CudaBackend<T>                 a codec's CUDA half, made on first use (refusing without CUDA)
//   gwc::CodecText, gwc::CodecPlugin<C, text, keys>::entry(major)
//                                       gw_plugin_entry of a plugin holding the one codec C
//
// A NULL gw_codec_context becomes GW_CODEC_CONTEXT_INIT's values.
#pragma once

#include <gradwire/plugin.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <new>
#include <string>
#include <utility>

namespace gwc {

class Error : public std::exception {
 public:
  Error(gw_status status, std::string message) : status_(status), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  gw_status status() const noexcept { return status_; }

 private:
  gw_status status_;
  std::string message_;
};

[[noreturn]] inline void fail(gw_status status, std::string message) {
  throw Error(status, std::move(message));
}

inline void report(const gw_host* host, const char* message) noexcept {
  if (host && GW_STRUCT_HAS(host, gw_host, set_error) && host->set_error)
    host->set_error(host->ctx, message);
}

template <class Fn>
gw_status guard(const gw_host* host, Fn&& fn) noexcept {
  try {
    fn();
    return GW_OK;
  } catch (const Error& e) {
    report(host, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    report(host, "out of host memory in a codec; use smaller buffers or free memory");
    return GW_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    report(host, (std::string("internal codec error: ") + e.what()).c_str());
    return GW_ERR_INTERNAL;
  } catch (...) {
    report(host, "internal codec error: unknown exception");
    return GW_ERR_INTERNAL;
  }
}

inline constexpr uint32_t kDenseDtypes = (1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16);

inline uint32_t dtype_size(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: return 4;
    case GW_DTYPE_F16:
    case GW_DTYPE_BF16: return 2;
    default: return 0;
  }
}

inline const char* dtype_name(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: return "f32";
    case GW_DTYPE_F64: return "f64";
    case GW_DTYPE_F16: return "f16";
    case GW_DTYPE_BF16: return "bf16";
    case GW_DTYPE_I32: return "i32";
    case GW_DTYPE_I64: return "i64";
    case GW_DTYPE_U8: return "u8";
    default: return "unknown";
  }
}

class ConfigReader {
 public:
  ConfigReader(const gw_host* host, const gw_config* config) : host_(host), config_(config) {}

  bool get_bool(const char* key, bool fallback) const {
    if (!config_ || !host_->config_get_bool) return fallback;
    int32_t v = 0;
    check(host_->config_get_bool(config_, key, &v), key);
    return v != 0;
  }
  int64_t get_int(const char* key, int64_t fallback) const {
    if (!config_ || !host_->config_get_int) return fallback;
    int64_t v = 0;
    check(host_->config_get_int(config_, key, &v), key);
    return v;
  }
  double get_float(const char* key, double fallback) const {
    if (!config_ || !host_->config_get_float) return fallback;
    double v = 0;
    check(host_->config_get_float(config_, key, &v), key);
    return v;
  }
  std::string get_string(const char* key, const char* fallback) const {
    if (!config_ || !host_->config_get_string) return fallback;
    const char* v = nullptr;
    check(host_->config_get_string(config_, key, &v), key);
    return v ? v : fallback;
  }

 private:
  static void check(gw_status s, const char* key) {
    if (s != GW_OK)
      fail(GW_ERR_CONFIG, std::string("codec configuration key '") + key +
                              "' could not be read from the host (status " + std::to_string(s) + ")");
  }
  const gw_host* host_;
  const gw_config* config_;
};

class CodecBase {
 public:
  CodecBase(const gw_host* host, const char* name) : host_(host), name_(name) {}
  virtual ~CodecBase() = default;
  CodecBase(const CodecBase&) = delete;
  CodecBase& operator=(const CodecBase&) = delete;

  const gw_host* host() const { return host_; }
  const char* name() const { return name_; }

  virtual gw_codec_properties properties() const = 0;
  virtual void max_encoded_size(gw_dtype dtype, uint64_t count, uint64_t* body,
                                uint64_t* workspace) const = 0;
  virtual uint64_t encode(const gw_codec_context& ctx, const gw_tensor& in, void* body,
                          uint64_t capacity) = 0;
  virtual void decode(const gw_codec_context& ctx, const void* body, uint64_t size, gw_tensor& out,
                      uint32_t flags) = 0;

  [[noreturn]] void corrupt(const std::string& what) const {
    fail(GW_ERR_CORRUPT, std::string("corrupt ") + name_ + " payload: " + what +
                             "; the sender used another codec configuration or the bytes were damaged");
  }

  // Refuses a dtype outside kDenseDtypes.
  void check_dtype(gw_dtype dtype) const {
    if (dtype < 0 || dtype > 31 || !(kDenseDtypes & (1u << dtype)))
      fail(GW_ERR_UNSUPPORTED, std::string(name_) + " codec does not accept dtype " + dtype_name(dtype) +
                                   "; use f32, f16 or bf16");
  }

  // Refuses a dtype the codec does not accept and a buffer that cannot be read. The plugin side's own
  // tensor check: a plugin links nothing of the runtime (runtime/core/tensor.hpp checks what
  // applications pass), so the two stay apart at the ABI boundary. A host built with another header may
  // pass a tensor of another struct_size: anything from the first version on is accepted.
  void check_tensor(const gw_tensor& t, uint32_t dtypes, const char* role) const {
    if (!GW_STRUCT_HAS(&t, gw_tensor, stream))
      fail(GW_ERR_INVALID_ARGUMENT, std::string(name_) + ": " + role +
                                        " tensor has struct_size too small; fill it with GW_TENSOR_INIT");
    if (t.dtype < 0 || t.dtype > 31 || !(dtypes & (1u << t.dtype)))
      fail(GW_ERR_UNSUPPORTED, std::string(name_) + " codec does not accept " + role + " dtype " +
                                   dtype_name(t.dtype) + "; use f32" +
                                   ((dtypes & (1u << GW_DTYPE_F16)) ? ", f16" : "") +
                                   ((dtypes & (1u << GW_DTYPE_BF16)) ? ", bf16" : ""));
    if (t.count > 0 && !t.data)
      fail(GW_ERR_INVALID_ARGUMENT, std::string(name_) + ": " + role + " tensor has count " +
                                        std::to_string(t.count) + " but data is NULL");
    if (t.memory != GW_MEMORY_HOST && t.memory != GW_MEMORY_CUDA)
      fail(GW_ERR_INVALID_ARGUMENT, std::string(name_) + ": " + role + " tensor has unknown memory kind " +
                                        std::to_string(static_cast<int>(t.memory)));
  }

 private:
  const gw_host* host_;
  const char* name_;
};

inline gw_codec_context context_or_default(const gw_codec_context* ctx) {
  gw_codec_context c = GW_CODEC_CONTEXT_INIT;
  if (ctx) {
    c.seed = ctx->seed;
    c.step = ctx->step;
    c.rank = ctx->rank;
    c.world_size = ctx->world_size ? ctx->world_size : 1;
    c.workspace = ctx->workspace;
    c.workspace_bytes = ctx->workspace_bytes;
  }
  return c;
}

template <class C>
struct VtableFor {
  static gw_status create(void*, const gw_host* host, const gw_config* config, void** codec) {
    if (!codec) return GW_ERR_INVALID_ARGUMENT;
    return guard(host, [&] {
      ConfigReader reader(host, config);
      *codec = static_cast<CodecBase*>(new C(host, reader));
    });
  }
  static void destroy(void* codec) { delete static_cast<CodecBase*>(codec); }
  static gw_status properties(void* codec, gw_codec_properties* out) {
    auto* c = static_cast<CodecBase*>(codec);
    return guard(c->host(), [&] {
      if (!out) fail(GW_ERR_INVALID_ARGUMENT, "properties: out is NULL");
      const gw_codec_properties p = c->properties();
      out->flags = p.flags;
      out->sum_dtype = p.sum_dtype;
      out->dtypes = p.dtypes;
    });
  }
  static gw_status max_encoded_size(void* codec, gw_dtype dtype, uint64_t count, uint64_t* body,
                                    uint64_t* workspace) {
    auto* c = static_cast<CodecBase*>(codec);
    return guard(c->host(), [&] {
      uint64_t b = 0, w = 0;
      c->max_encoded_size(dtype, count, &b, &w);
      if (body) *body = b;
      if (workspace) *workspace = w;
    });
  }
  static gw_status encode(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body,
                          uint64_t capacity, uint64_t* body_size) {
    auto* c = static_cast<CodecBase*>(codec);
    return guard(c->host(), [&] {
      if (!in || !body_size) fail(GW_ERR_INVALID_ARGUMENT, std::string(c->name()) + " encode: NULL argument");
      const gw_codec_context cx = context_or_default(ctx);
      *body_size = c->encode(cx, *in, body, capacity);
    });
  }
  static gw_status decode(void* codec, const gw_codec_context* ctx, const void* body, uint64_t size,
                          gw_tensor* out, uint32_t flags) {
    auto* c = static_cast<CodecBase*>(codec);
    return guard(c->host(), [&] {
      if (!out) fail(GW_ERR_INVALID_ARGUMENT, std::string(c->name()) + " decode: out is NULL");
      if (size > 0 && !body) fail(GW_ERR_INVALID_ARGUMENT, std::string(c->name()) + " decode: body is NULL");
      if (flags & ~static_cast<uint32_t>(GW_DECODE_ACCUMULATE))
        fail(GW_ERR_INVALID_ARGUMENT, std::string(c->name()) + " decode: unknown flags " + std::to_string(flags));
      const gw_codec_context cx = context_or_default(ctx);
      c->decode(cx, body, size, *out, flags);
    });
  }
};

template <class C>
constexpr gw_codec_vtable make_codec_vtable() {
  gw_codec_vtable v{};
  v.struct_size = sizeof(gw_codec_vtable);
  v.create = &VtableFor<C>::create;
  v.destroy = &VtableFor<C>::destroy;
  v.properties = &VtableFor<C>::properties;
  v.max_encoded_size = &VtableFor<C>::max_encoded_size;
  v.encode = &VtableFor<C>::encode;
  v.decode = &VtableFor<C>::decode;
  v.get_extension = nullptr;
  return v;
}

// Fails with GW_ERR_BUFFER_TOO_SMALL when `need` bytes do not fit in `capacity`.
inline void check_capacity(const CodecBase& c, uint64_t need, uint64_t capacity, const void* body) {
  if (capacity < need)
    fail(GW_ERR_BUFFER_TOO_SMALL, std::string(c.name()) + " encode needs " + std::to_string(need) +
                                      " body bytes but the buffer holds " + std::to_string(capacity) +
                                      "; size it with max_encoded_size");
  if (need > 0 && !body) fail(GW_ERR_INVALID_ARGUMENT, std::string(c.name()) + " encode: body is NULL");
}

// ---- the CUDA side of a codec ----------------------------------------------------------------------

[[noreturn]] inline void fail_cuda(const CodecBase& c, const char* what, int code, const char* error) {
  fail(GW_ERR_INTERNAL, std::string(c.name()) + " CUDA " + what + " failed: " + error + " (" +
                            std::to_string(code) + "); check the device, the stream and that the buffers are "
                            "device memory");
}

// ops: the codec's CUDA kernels, NULL in a plugin built without them.
inline void refuse_cuda(const CodecBase& c, const gw_tensor& t, const void* ops) {
  if (t.memory == GW_MEMORY_CUDA && !ops)
    fail(GW_ERR_UNSUPPORTED, std::string(c.name()) +
                                 " codec was built without CUDA; pass host tensors or rebuild with GW_WITH_CUDA=ON");
}

// Device bodies of the CUDA kernels are read and written in 4-byte words.
inline void require_cuda_alignment(const CodecBase& c, const void* body) {
  if (reinterpret_cast<uintptr_t>(body) % 4 != 0)
    fail(GW_ERR_INVALID_ARGUMENT, std::string(c.name()) +
                                      ": a CUDA body must be 4-byte aligned; allocate the payload with cudaMalloc");
}

// GW_CODEC_CUDA_OPS(expr): expr (the plugin's table of CUDA kernels) in a plugin built with its .cu
// files (GW_CODEC_WITH_CUDA), else nullptr without evaluating expr, whose function is then not defined.
#if defined(GW_CODEC_WITH_CUDA)
#define GW_CODEC_CUDA_OPS(expr) (expr)
#else
#define GW_CODEC_CUDA_OPS(expr) nullptr
#endif

// What CudaBackend<T>::get() returns in a plugin built without CUDA: encode and decode refuse.
struct CudaRefusal {
  const char* codec;
  [[noreturn]] void refuse() const {
    fail(GW_ERR_UNSUPPORTED,
         std::string(codec) + " was built without CUDA; pass host tensors or rebuild with GW_WITH_CUDA=ON");
  }
  template <class... A> uint64_t encode(A&&...) const { refuse(); }
  template <class... A> void decode(A&&...) const { refuse(); }
};

// The CUDA half T of a codec (its device scratch and kernels), made on first use by get(). In a plugin
// built without CUDA, T need only be declared: get() returns a stand-in whose encode and decode fail with
// GW_ERR_UNSUPPORTED. kCodecFlags: GW_CODEC_CUDA when the kernels are there, for properties().
template <class T>
class CudaBackend {
 public:
#if defined(GW_CODEC_WITH_CUDA)
  static constexpr uint32_t kCodecFlags = GW_CODEC_CUDA;
  explicit CudaBackend(const char* /*codec*/) {}
  T& get() {
    if (!impl_) impl_ = std::make_unique<T>();
    return *impl_;
  }

 private:
  std::unique_ptr<T> impl_;
#else
  static constexpr uint32_t kCodecFlags = 0;
  explicit CudaBackend(const char* codec) : codec_(codec) {}
  CudaRefusal get() const { return {codec_}; }

 private:
  const char* codec_;
#endif
};

// ---- the plugin --------------------------------------------------------------------------------------

// The texts of a plugin whose one component is a codec of the same name.
struct CodecText {
  const char* name;                // "fp16": the plugin's and the codec's name
  const char* help;                // the codec component's one sentence
  const char* description;         // the plugin's
  const char* version = "1.0.0";   // the plugin's version
};

// The descriptor of a plugin holding the one codec class C (see make_codec_vtable), with the texts kText
// and the configuration keys kKeys (an array of gw_config_key); both must be constexpr objects. A plugin's
// whole C entry point is then
//   GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t major, uint32_t) {
//     return gwc::CodecPlugin<Codec, kText, kKeys>::entry(major);
//   }
template <class C, const CodecText& kText, const auto& kKeys>
struct CodecPlugin {
  static constexpr gw_codec_vtable kVtable = make_codec_vtable<C>();
  static constexpr gw_component kComponents[] = {
      {sizeof(gw_component), GW_COMPONENT_CODEC, kText.name, kText.help, kKeys,
       static_cast<uint32_t>(std::size(kKeys)), &kVtable},
  };
  static constexpr gw_plugin_descriptor kDescriptor = {
      sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, kText.name, kText.version,
      kText.description, nullptr, nullptr, kComponents, static_cast<uint32_t>(std::size(kComponents)), nullptr};

  static const gw_plugin_descriptor* entry(uint32_t host_abi_major) {
    return host_abi_major == GW_ABI_VERSION_MAJOR ? &kDescriptor : nullptr;
  }
};

}  // namespace gwc
