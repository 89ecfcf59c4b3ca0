# gw_add_plugin(NAME <name> SOURCES <files...> [LIBRARIES <targets...>])
# Builds plugins/<name> or transports/<name> as a loadable module named libgw-<name>.so in
# <build>/lib/gradwire/plugins, installed to <libdir>/gradwire/plugins. A plugin links only the
# public headers (gradwire::headers), never libgradwire itself.
function(gw_add_plugin)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBRARIES" ${ARGN})
  set(target gw_plugin_${ARG_NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE gradwire_headers ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME gw-${ARG_NAME}
    LIBRARY_OUTPUT_DIRECTORY ${GW_PLUGIN_OUTPUT_DIRECTORY})
  # A plugin exports gw_plugin_entry and nothing else.
  target_link_options(${target} PRIVATE "LINKER:--version-script=${PROJECT_SOURCE_DIR}/abi/plugin.map"
    ${GW_NO_UNDEFINED})
  install(TARGETS ${target} LIBRARY DESTINATION ${GW_PLUGIN_SUBDIR})
endfunction()
