# The sparse codecs' GPU checks (included by tests/gpu/CMakeLists.txt, CUDA builds only):
#   gpu_sparse_test       G3: topk / randomk CUDA bodies and decodes == the CPU path's, bit for bit
#   gpu_sparse_cabi_test  the same through gw_codec_encode / gw_codec_decode with device tensors
#   gw_gpu_g2             G2, our side: topk 1 % of 2^28 f32; g2_torch_topk.py times torch.topk on its dump
gw_add_gtest(NAME gpu_sparse_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_sparse_test.cpp
  LIBRARIES CUDA::cudart gw_codec_common ${CMAKE_DL_LIBS}
  LABELS gpu)
add_dependencies(gpu_sparse_test gw_plugin_topk gw_plugin_randomk)

gw_add_gtest(NAME gpu_sparse_cabi_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_sparse_cabi_test.cpp
  LIBRARIES CUDA::cudart gradwire::gradwire gw_codec_common
  LABELS gpu)
add_dependencies(gpu_sparse_cabi_test gw_plugin_topk gw_plugin_randomk)

add_executable(gw_gpu_g2 ${CMAKE_CURRENT_LIST_DIR}/g2_topk.cu)
target_link_libraries(gw_gpu_g2 PRIVATE CUDA::cudart gradwire_headers ${CMAKE_DL_LIBS})
target_compile_definitions(gw_gpu_g2 PRIVATE GW_PLUGIN_DIR="${GW_PLUGIN_OUTPUT_DIRECTORY}")
set_target_properties(gw_gpu_g2 PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
add_dependencies(gw_gpu_g2 gw_plugin_topk)
