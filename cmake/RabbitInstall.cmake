# `cmake --install` (docs/install.md): a prefix that can be moved, because every installed binary
# finds its libraries through RUNPATH $ORIGIN/../lib (CMakeLists.txt) and nothing points back into
# the checkout:
#   bin/            the apps (installed with their targets in CMakeLists.txt)
#   lib/            librabbit_<module>.so, and C-Blosc2 (libblosc2.so*) copied from .deps/blosc2
#   lib/rabbit/     rabbit_cuda_plugin.so, when built (cmake/RabbitCudaPlugin.cmake)
#   include/rabbit/ the public headers
#   lib/cmake/rabbit/ rabbitConfig.cmake and the exported targets rabbit::<module>, for
#                   find_package(rabbit)
# Debian's libraries (HDF5, c-blosc, LAPACK, OpenMP, spdlog/fmt) stay where the system has them.
include(CMakePackageConfigHelpers)

get_property(rabbit_shared_modules GLOBAL PROPERTY RABBIT_SHARED_MODULES)
set_target_properties(rabbit_lapack PROPERTIES EXPORT_NAME lapack)
install(TARGETS ${rabbit_shared_modules} rabbit_lapack EXPORT rabbitTargets LIBRARY DESTINATION lib)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/rabbit" DESTINATION include)

# The library file and its soname (the blosc2 wheel ships both as files; a system copy as links).
file(GLOB rabbit_blosc2_files "${BLOSC2_LIBDIR}/libblosc2.so*")
install(FILES ${rabbit_blosc2_files} DESTINATION lib)

install(EXPORT rabbitTargets NAMESPACE rabbit:: DESTINATION lib/cmake/rabbit)
get_filename_component(rabbit_blosc2_name "${BLOSC2_LIBRARY}" NAME)
set(RABBIT_INSTALLED_BLOSC2 "lib/${rabbit_blosc2_name}")  # made absolute (prefix-relative) by the helper
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/rabbitConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/rabbitConfig.cmake" INSTALL_DESTINATION lib/cmake/rabbit
  PATH_VARS RABBIT_INSTALLED_BLOSC2)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/rabbitConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/rabbitConfig.cmake" "${PROJECT_BINARY_DIR}/rabbitConfigVersion.cmake"
  DESTINATION lib/cmake/rabbit)
