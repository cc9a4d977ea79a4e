# Install rules, the CMake package config (find_package(shardgate) -> shardgate::shardgate) and
# the Debian package made by CPack (`cpack -G DEB` in a build directory). Included from the top
# CMakeLists.txt when SG_INSTALL is ON. Layout under the prefix:
#   bin/ane-validator, bin/golden-validator       the two tools
#   lib/libshardgate.a, include/shardgate/*.h      the library and its public headers
#   lib/cmake/shardgate/                           the package config
#   share/shardgate/{gates,schema,sample}/         gate files, report schemas, the bundled sample
# Two install components, one Debian package each (below): `tools` (the tools and share/) and
# `dev` (the library, its headers and the package config). `cmake --install` installs both.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardgate)
set(SG_DATA_DIR ${CMAKE_INSTALL_DATADIR}/shardgate)

install(TARGETS ane-validator golden-validator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT tools)
install(TARGETS shardgate EXPORT shardgateTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        COMPONENT dev)

# Public headers, with the metric table fidelity.h expands (metrics.def). The op table
# (runtime/ops/ops.def) and the kernel declarations stay private: ops.h answers by op name and
# needs neither.
file(GLOB SG_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/include/shardgate/*.h
     ${PROJECT_SOURCE_DIR}/runtime/include/shardgate/*.def)
install(FILES ${SG_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardgate COMPONENT dev)

install(EXPORT shardgateTargets NAMESPACE shardgate:: DESTINATION ${SG_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/shardgateConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/shardgateConfig.cmake
                              INSTALL_DESTINATION ${SG_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardgateConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardgateConfig.cmake
              ${PROJECT_BINARY_DIR}/shardgateConfigVersion.cmake
        DESTINATION ${SG_CMAKE_DIR} COMPONENT dev)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/gates/ DESTINATION ${SG_DATA_DIR}/gates COMPONENT tools
        FILES_MATCHING PATTERN "*.json" PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/schema/ DESTINATION ${SG_DATA_DIR}/schema
        COMPONENT tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/goldens/sample/ DESTINATION ${SG_DATA_DIR}/sample
        COMPONENT tools)

# Debian packages, split as Debian splits a library: `shardgate` (component tools: both tools and
# the data; its Depends come from dpkg-shlibdeps over the executables) and `shardgate-dev`
# (component dev: the static library, headers and package config). A static library has no
# shared-library dependencies for dpkg-shlibdeps to find, so shardgate-dev names what
# find_package(shardgate) needs (shardgateConfig.cmake.in: fmt, nlohmann_json, ZLIB; Threads is
# libc's), and shardgate of the same version, so the library and the tools installed beside it
# never come from two versions.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shardgate)
set(CPACK_PACKAGE_VENDOR "shardgate")
set(CPACK_PACKAGE_CONTACT "shardgate maintainers <shardgate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Validation gates for Apple Neural Engine model shards (ane-validator, golden-validator)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL tools dev)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME shardgate)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME shardgate-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "shardgate (= ${PROJECT_VERSION}), libfmt-dev, nlohmann-json3-dev, zlib1g-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "The C++ library the tools are built on (package shardgate-dev):
the static library, its headers and the CMake package config, find_package(shardgate)
-> shardgate::shardgate.")
set(CPACK_STRIP_FILES ON)
# No package without its dependencies: cpack stops when dpkg-shlibdeps or file is missing.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/cpack_checks.cmake)
include(CPack)
