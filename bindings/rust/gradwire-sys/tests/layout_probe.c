/* Prints the layout of every struct of gradwire.h and the value of every constant, one per line, for
 * tests/layout.rs to compare with the Rust declarations. Compiled by that test with the C compiler. */
#include <gradwire/gradwire.h>

#include <stddef.h>
#include <stdio.h>

#define S(T) printf("size %s %zu %zu\n", #T, sizeof(T), _Alignof(T))
#define F(T, f) printf("field %s.%s %zu %zu\n", #T, #f, offsetof(T, f), sizeof(((T*)0)->f))
#define C(name) printf("const %s %lld\n", #name, (long long)(name))

int main(void) {
  S(gw_tensor); F(gw_tensor, struct_size); F(gw_tensor, memory); F(gw_tensor, dtype); F(gw_tensor, device);
  F(gw_tensor, data); F(gw_tensor, count); F(gw_tensor, stream);
  S(gw_codec_properties); F(gw_codec_properties, struct_size); F(gw_codec_properties, flags);
  F(gw_codec_properties, sum_dtype); F(gw_codec_properties, dtypes);
  S(gw_codec_context); F(gw_codec_context, struct_size); F(gw_codec_context, seed); F(gw_codec_context, step);
  F(gw_codec_context, rank); F(gw_codec_context, world_size); F(gw_codec_context, workspace);
  F(gw_codec_context, workspace_bytes); F(gw_codec_context, buffer_id); F(gw_codec_context, shapes);
  F(gw_codec_context, num_shapes);
  S(gw_tensor_shape); F(gw_tensor_shape, offset); F(gw_tensor_shape, rows); F(gw_tensor_shape, cols);
  S(gw_runtime_options); F(gw_runtime_options, struct_size); F(gw_runtime_options, config_path);
  F(gw_runtime_options, config_text); F(gw_runtime_options, plugin_paths); F(gw_runtime_options, num_plugin_paths);
  F(gw_runtime_options, log); F(gw_runtime_options, log_user); F(gw_runtime_options, log_level);
  F(gw_runtime_options, flags);
  S(gw_plugin_info); F(gw_plugin_info, struct_size); F(gw_plugin_info, path); F(gw_plugin_info, status);
  F(gw_plugin_info, error); F(gw_plugin_info, name); F(gw_plugin_info, version); F(gw_plugin_info, description);
  F(gw_plugin_info, abi_major); F(gw_plugin_info, abi_minor); F(gw_plugin_info, num_components);
  S(gw_component_info); F(gw_component_info, struct_size); F(gw_component_info, kind); F(gw_component_info, name);
  F(gw_component_info, help);
  S(gw_comm_options); F(gw_comm_options, struct_size); F(gw_comm_options, rank); F(gw_comm_options, world_size);
  F(gw_comm_options, local_rank); F(gw_comm_options, root_address); F(gw_comm_options, root_port);
  F(gw_comm_options, allgather); F(gw_comm_options, allgather_user); F(gw_comm_options, timeout_s);
  S(gw_sync_options); F(gw_sync_options, struct_size); F(gw_sync_options, runtime); F(gw_sync_options, flags);
  S(gw_sync_bucket_info); F(gw_sync_bucket_info, struct_size); F(gw_sync_bucket_info, codec);
  F(gw_sync_bucket_info, count); F(gw_sync_bucket_info, num_tensors); F(gw_sync_bucket_info, flags);
  S(gw_sync_stats); F(gw_sync_stats, struct_size); F(gw_sync_stats, raw_bytes); F(gw_sync_stats, wire_bytes);
  F(gw_sync_stats, compression_ratio); F(gw_sync_stats, encode_seconds); F(gw_sync_stats, transfer_seconds);
  F(gw_sync_stats, decode_seconds); F(gw_sync_stats, steps); F(gw_sync_stats, syncs);
  F(gw_sync_stats, codec); F(gw_sync_stats, codec_reason);
  /* enums are 32-bit: the Rust aliases are i32 */
  S(gw_status); S(gw_dtype); S(gw_memory_kind); S(gw_reduce_op); S(gw_log_level); S(gw_config_format);

  C(GW_ABI_VERSION_MAJOR); C(GW_ABI_VERSION_MINOR);
  C(GW_OK); C(GW_IN_PROGRESS); C(GW_ERR_INVALID_ARGUMENT); C(GW_ERR_NO_MEMORY); C(GW_ERR_NOT_FOUND);
  C(GW_ERR_PLUGIN); C(GW_ERR_VERSION); C(GW_ERR_CONFIG); C(GW_ERR_UNSUPPORTED); C(GW_ERR_TIMEOUT);
  C(GW_ERR_MISMATCH); C(GW_ERR_TRANSPORT); C(GW_ERR_CORRUPT); C(GW_ERR_ABORTED); C(GW_ERR_BUFFER_TOO_SMALL);
  C(GW_ERR_STATE); C(GW_ERR_INTERNAL);
  C(GW_DTYPE_F32); C(GW_DTYPE_F64); C(GW_DTYPE_F16); C(GW_DTYPE_BF16); C(GW_DTYPE_I32); C(GW_DTYPE_I64);
  C(GW_DTYPE_U8);
  C(GW_MEMORY_HOST); C(GW_MEMORY_CUDA);
  C(GW_REDUCE_SUM); C(GW_REDUCE_AVG); C(GW_REDUCE_MIN); C(GW_REDUCE_MAX);
  C(GW_LOG_ERROR); C(GW_LOG_WARN); C(GW_LOG_INFO); C(GW_LOG_DEBUG); C(GW_LOG_TRACE);
  C(GW_CONFIG_FORMAT_TOML); C(GW_CONFIG_FORMAT_REFERENCE);
  C(GW_CODEC_LOSSLESS); C(GW_CODEC_SPARSE); C(GW_CODEC_SUMMABLE); C(GW_CODEC_SHARED_INDICES); C(GW_CODEC_CUDA);
  C(GW_CODEC_STATEFUL); C(GW_CODEC_ROUNDS); C(GW_DECODE_ACCUMULATE);
  C(GW_RUNTIME_NO_ENV_OVERRIDES); C(GW_RUNTIME_INSPECT_ONLY);
  C(GW_SYNC_ALL_BUCKETS); C(GW_SYNC_APPLY); C(GW_SYNC_GRADIENTS_AVERAGED); C(GW_SYNC_PARAMETERS_AVERAGED);
  C(GW_SYNC_OUTER_STEP);
  return 0;
}
