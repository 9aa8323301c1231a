# The CUDA backend as a plugin (docs/sharding-and-gpu.md "The CUDA plugin"):
#  - rabbit_backend_cuda: the CUDA sources (src/backend/cuda) as an archive of position-independent
#    objects. Only the plugin and test_backend_cuda (which calls the backend directly) link it, so no
#    app depends on a CUDA library.
#  - rabbit_cuda_plugin: rabbit_cuda_plugin.so, the archive plus the entry point
#    (src/backend/cuda/plugin/cuda_plugin.cpp), built next to the apps and installed into
#    lib/rabbit/, where the fit module's loader looks for it. It links the shared rabbit modules, so
#    the process keeps one logger and one set of exception types.
rabbit_module(backend/cuda STATIC DEPS rabbit_model rabbit_minimize CUDA::cudart CUDA::cublas CUDA::cusolver)
# Only the tests that exercise the CUDA code directly see this (tests/backend/cuda guard with it).
target_compile_definitions(rabbit_backend_cuda PUBLIC RABBIT_HAVE_CUDA=1)

add_library(rabbit_cuda_plugin MODULE "${PROJECT_SOURCE_DIR}/src/backend/cuda/plugin/cuda_plugin.cpp")
target_link_libraries(rabbit_cuda_plugin PRIVATE rabbit_backend_cuda)
rabbit_warnings(rabbit_cuda_plugin)
set_target_properties(rabbit_cuda_plugin PROPERTIES
  PREFIX "" OUTPUT_NAME rabbit_cuda_plugin
  LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}"
  # Installed into lib/rabbit/: the module libraries and C-Blosc2 are one level up; the CUDA
  # libraries where the toolkit has them (the plugin is the only file that needs them).
  INSTALL_RPATH "$ORIGIN/..;${CUDAToolkit_LIBRARY_DIR}")
# A plugin with an unresolved symbol would fail only when opened: refuse it at link time.
target_link_options(rabbit_cuda_plugin PRIVATE -Wl,--no-undefined)
install(TARGETS rabbit_cuda_plugin LIBRARY DESTINATION lib/rabbit)
