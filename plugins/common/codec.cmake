# Included by each codec plugin's CMakeLists.txt (plugins/common is added after some of them).
include_guard(GLOBAL)

# gw_codec_plugin_cuda(<target>): with GW_WITH_CUDA, the plugin's .cu files are compiled for the
# project's CMAKE_CUDA_ARCHITECTURES, the CUDA runtime is linked statically, and the C++ side sees
# GW_CODEC_WITH_CUDA.
function(gw_codec_plugin_cuda target)
  if(NOT GW_WITH_CUDA)
    return()
  endif()
  target_compile_definitions(${target} PRIVATE GW_CODEC_WITH_CUDA=1)
  target_link_libraries(${target} PRIVATE CUDA::cudart_static)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endfunction()
