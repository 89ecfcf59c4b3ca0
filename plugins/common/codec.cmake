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

# gw_add_codec_plugin(NAME <name> SOURCES <files...> [CUDA_SOURCES <.cu files...>] [LIBRARIES <targets...>])
# A codec plugin (gw_add_plugin): its folder on its include path, and with GW_WITH_CUDA its CUDA_SOURCES
# too, built as gw_codec_plugin_cuda says.
function(gw_add_codec_plugin)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;CUDA_SOURCES;LIBRARIES" ${ARGN})
  set(sources ${ARG_SOURCES})
  if(GW_WITH_CUDA)
    list(APPEND sources ${ARG_CUDA_SOURCES})
  endif()
  gw_add_plugin(NAME ${ARG_NAME} SOURCES ${sources} LIBRARIES ${ARG_LIBRARIES})
  target_include_directories(gw_plugin_${ARG_NAME} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  gw_codec_plugin_cuda(gw_plugin_${ARG_NAME})
endfunction()
