# SPDX-License-Identifier: MIT OR Apache-2.0
# The install rules of the library (included by src/CMakeLists.txt when
# RLX_ATTN_MASK_INSTALL is on, the default for a top-level build): the
# library, the public headers with the generated version header, the CMake
# package (rlx::attn_mask, find_package(rlx_attn_mask CONFIG)), pkg-config
# metadata and the licence texts.
include(CMakePackageConfigHelpers)
set(RLX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rlx_attn_mask)
install(TARGETS rlx_attn_mask EXPORT rlx_attn_mask_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rlx
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/rlx/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rlx)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE-MIT ${PROJECT_SOURCE_DIR}/LICENSE-APACHE
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT rlx_attn_mask_targets NAMESPACE rlx::
  FILE rlx_attn_mask-targets.cmake DESTINATION ${RLX_CMAKE_DIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/rlx_attn_mask-config.cmake.in
  ${PROJECT_BINARY_DIR}/rlx_attn_mask-config.cmake
  INSTALL_DESTINATION ${RLX_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/rlx_attn_mask-config-version.cmake
  COMPATIBILITY ${RLX_PACKAGE_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/rlx_attn_mask-config.cmake
  ${PROJECT_BINARY_DIR}/rlx_attn_mask-config-version.cmake
  DESTINATION ${RLX_CMAKE_DIR})

# pkg-config metadata for C and other non-CMake consumers, relocatable: its
# prefix is taken relative to the installed .pc file. Highway comes in
# through its own pkg-config file (Requires.private), the C++ runtime and
# libm through Libs.private: a static library's consumers link with
# `pkg-config --static --libs rlx-attn-mask`, a shared one carries them.
file(RELATIVE_PATH RLX_PC_RELATIVE_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" RLX_PC_RELATIVE_PREFIX "${RLX_PC_RELATIVE_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/rlx-attn-mask.pc.in
  ${PROJECT_BINARY_DIR}/rlx-attn-mask.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rlx-attn-mask.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
