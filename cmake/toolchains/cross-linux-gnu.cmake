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
# OpenSSL's libcrypto and libssl for the target (the RPC handshake and TLS): Debian's multiarch libssl-dev:arm64 /
# :armhf (scripts/bootstrap.sh installs them). Its headers are the host's /usr/include/openssl
# with the target's configuration headers, linked into the same folder.
set(loom_target_crypto /usr/lib/${LOOM_CROSS_TRIPLE}/libcrypto.so)
if(EXISTS ${loom_target_crypto} AND EXISTS /usr/include/${LOOM_CROSS_TRIPLE}/openssl/configuration.h)
  if(NOT EXISTS ${loom_host_headers}/openssl)
    file(MAKE_DIRECTORY ${loom_host_headers}/openssl)
    file(GLOB target_headers /usr/include/${LOOM_CROSS_TRIPLE}/openssl/*.h)
    file(GLOB shared_headers /usr/include/openssl/*.h)
    foreach(h ${target_headers} ${shared_headers})  # the target's configuration headers first
      get_filename_component(name ${h} NAME)
      if(NOT EXISTS ${loom_host_headers}/openssl/${name})
        file(CREATE_LINK ${h} ${loom_host_headers}/openssl/${name} SYMBOLIC)
      endif()
    endforeach()
  endif()
  set(OPENSSL_INCLUDE_DIR ${loom_host_headers} CACHE PATH "OpenSSL headers for ${LOOM_CROSS_TRIPLE}")
  set(OPENSSL_CRYPTO_LIBRARY ${loom_target_crypto} CACHE FILEPATH "libcrypto for ${LOOM_CROSS_TRIPLE}")
  set(OPENSSL_SSL_LIBRARY /usr/lib/${LOOM_CROSS_TRIPLE}/libssl.so CACHE FILEPATH "libssl for ${LOOM_CROSS_TRIPLE}")
endif()
set(BOOST_INCLUDEDIR ${loom_host_headers})
set(Boost_NO_SYSTEM_PATHS ON)
set(CMAKE_C_FLAGS_INIT "${LOOM_CROSS_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${LOOM_CROSS_FLAGS} -isystem ${loom_host_headers}")
