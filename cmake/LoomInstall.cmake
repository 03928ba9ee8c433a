# `cmake --install build --prefix P` installs Loom as a package:
#   P/bin/loom, P/lib/libloom_*.so, P/include/loom/..., P/share/loom/configs/*.json,
#   P/share/loom/rtl/*.sv (+ the generated parameter package per built config),
#   P/lib/cmake/Loom/LoomConfig.cmake: find_package(Loom) gives imported targets
#   Loom::runtime, Loom::accel, Loom::sim, Loom::ir, Loom::schedule, Loom::ops, Loom::codegen,
#   Loom::graph, Loom::frontend, Loom::tune, Loom::regress, Loom::loom (the tool), and the groups
#   Loom::compiler (everything that compiles models) and Loom::simulators (Loom::sim).
# examples/consumer builds against an installed tree (test `loom_install_consumer`).
include(CMakePackageConfigHelpers)

set(loom_exported)
set(LOOM_PUBLIC_HEADERS)  # every installed header (tests/tools: the consumer compiles each on its own)
foreach(layer runtime accel sim ir schedule ops codegen graph frontend tune regress dse)
  if(TARGET loom_${layer})
    set_target_properties(loom_${layer} PROPERTIES EXPORT_NAME ${layer})
    list(APPEND loom_exported loom_${layer})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION include)
    file(GLOB_RECURSE layer_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${layer}/include/loom/*.h)
    list(APPEND LOOM_PUBLIC_HEADERS ${layer_headers})
  endif()
endforeach()
set_target_properties(loom PROPERTIES EXPORT_NAME loom)
install(TARGETS ${loom_exported} loom EXPORT LoomTargets LIBRARY DESTINATION lib RUNTIME DESTINATION bin)
install(TARGETS loom-rpc-server RUNTIME DESTINATION bin)  # the board-side server (runtime, accel, sim only)
if(TARGET loom_systemc)  # the systemc backend's platform, loaded by libloom_sim from its own folder
  install(TARGETS loom_systemc LIBRARY DESTINATION lib)
endif()
if(TARGET loom_llvm)  # the LLVM CPU backend, loaded by libloom_codegen from its own folder
  install(TARGETS loom_llvm LIBRARY DESTINATION lib)
endif()
install(EXPORT LoomTargets NAMESPACE Loom:: DESTINATION lib/cmake/Loom)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/accel/configs/ DESTINATION share/loom/configs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/rtl/ DESTINATION share/loom/rtl)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/kernel/ DESTINATION share/loom/kernel)
foreach(cfg IN LISTS LOOM_RTL_CONFIGS)
  install(FILES ${PROJECT_BINARY_DIR}/sim/rtl_${cfg}/loom_accel_pkg.sv DESTINATION share/loom/rtl/${cfg} OPTIONAL)
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/LoomConfig.cmake.in ${PROJECT_BINARY_DIR}/LoomConfig.cmake
                              INSTALL_DESTINATION lib/cmake/Loom)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/LoomConfig.cmake ${PROJECT_BINARY_DIR}/LoomConfigVersion.cmake DESTINATION lib/cmake/Loom)
