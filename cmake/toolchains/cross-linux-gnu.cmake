# What the per-target toolchain files share: Debian's cross compilers for LOOM_CROSS_TRIPLE and its
# C library (/usr/${LOOM_CROSS_TRIPLE}); no library or CMake package of the host is used (nlohmann
# JSON and DLPack come from third_party/). The header-only libraries the runtime-only build can
# use from the host (Boost.Asio for RPC, CLI11 for loom-rpc-server's options) are reached through
# a folder of links to them alone, never through the host's /usr/include, whose C library headers
# are not the target's.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${LOOM_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${LOOM_CROSS_TRIPLE}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/${LOOM_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(loom_host_headers ${CMAKE_BINARY_DIR}/loom_host_headers)
foreach(lib boost CLI)
  if(IS_DIRECTORY /usr/include/${lib} AND NOT EXISTS ${loom_host_headers}/${lib})
    file(MAKE_DIRECTORY ${loom_host_headers})
    file(CREATE_LINK /usr/include/${lib} ${loom_host_headers}/${lib} SYMBOLIC)
  endif()
endforeach()
set(BOOST_INCLUDEDIR ${loom_host_headers})
set(Boost_NO_SYSTEM_PATHS ON)
set(CMAKE_C_FLAGS_INIT "${LOOM_CROSS_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${LOOM_CROSS_FLAGS} -isystem ${loom_host_headers}")
