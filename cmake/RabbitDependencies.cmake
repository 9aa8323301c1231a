# Finds the third-party libraries. All come from Debian packages except C-Blosc2, which
# scripts/setup unpacks from PyPI's blosc2 wheel into .deps/blosc2 (see docs/input-reader.md "Compression filters and HDF5_PLUGIN_PATH").
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)
# The reference LAPACK (liblapack-dev) unless asked otherwise: with OpenBLAS also installed,
# FindLAPACK would pick it, and its own thread pool and summation order would change our
# results and compete with our threads (docs/benchmarks.md "Dense Hessian and dense linear algebra").
if(NOT DEFINED BLA_VENDOR)
  set(BLA_VENDOR Generic)
endif()
find_package(LAPACK REQUIRED)

if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_DEFINITIONS})
endif()

add_library(rabbit_lapack INTERFACE)
target_link_libraries(rabbit_lapack INTERFACE ${LAPACK_LIBRARIES})

# c-blosc (v1), Debian's libblosc-dev: decodes HDF5 filter 32001.
find_path(BLOSC_INCLUDE_DIR blosc.h REQUIRED)
find_library(BLOSC_LIBRARY NAMES blosc REQUIRED)
add_library(Blosc::blosc UNKNOWN IMPORTED)
set_target_properties(Blosc::blosc PROPERTIES IMPORTED_LOCATION "${BLOSC_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${BLOSC_INCLUDE_DIR}")

# C-Blosc2: decodes HDF5 filter 32026.
set(RABBIT_BLOSC2_ROOT "${CMAKE_CURRENT_SOURCE_DIR}/.deps/blosc2" CACHE PATH "Where scripts/setup put C-Blosc2")
if(SKBUILD AND NOT EXISTS "${RABBIT_BLOSC2_ROOT}/include/blosc2.h")
  # pip install without scripts/setup: the same wheel, installed in the build environment
  # (pyproject.toml's build-system.requires), has include/ and lib/ inside its package folder.
  execute_process(COMMAND "${Python_EXECUTABLE}" -c
    "import importlib.util, os; s = importlib.util.find_spec('blosc2'); print(os.path.dirname(s.origin) if s else '')"
    OUTPUT_VARIABLE rabbit_blosc2_wheel OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rabbit_blosc2_wheel)
    set(RABBIT_BLOSC2_ROOT "${rabbit_blosc2_wheel}" CACHE PATH "Where scripts/setup put C-Blosc2" FORCE)
  endif()
  # An isolated build environment is temporary: a reused build folder (-C build-dir) forgets the
  # previous one's paths.
  foreach(cached BLOSC2_INCLUDE_DIR BLOSC2_LIBRARY)
    if(${cached} AND NOT EXISTS "${${cached}}")
      unset(${cached} CACHE)
    endif()
  endforeach()
endif()
find_path(BLOSC2_INCLUDE_DIR blosc2.h HINTS "${RABBIT_BLOSC2_ROOT}/include" NO_DEFAULT_PATH)
find_path(BLOSC2_INCLUDE_DIR blosc2.h)
find_library(BLOSC2_LIBRARY NAMES blosc2 HINTS "${RABBIT_BLOSC2_ROOT}/lib" NO_DEFAULT_PATH)
find_library(BLOSC2_LIBRARY NAMES blosc2)
if(NOT BLOSC2_INCLUDE_DIR OR NOT BLOSC2_LIBRARY)
  message(FATAL_ERROR "C-Blosc2 not found: run scripts/setup (it unpacks it into .deps/blosc2), "
                      "or pass -DRABBIT_BLOSC2_ROOT=<prefix with include/blosc2.h and lib/libblosc2.so>")
endif()
add_library(Blosc2::blosc2 UNKNOWN IMPORTED)
set_target_properties(Blosc2::blosc2 PROPERTIES IMPORTED_LOCATION "${BLOSC2_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${BLOSC2_INCLUDE_DIR}")
get_filename_component(BLOSC2_LIBDIR "${BLOSC2_LIBRARY}" DIRECTORY)
# Installed, C-Blosc2 is copied beside our libraries (cmake/RabbitInstall.cmake): only the build
# tree points at .deps.
list(APPEND CMAKE_BUILD_RPATH "${BLOSC2_LIBDIR}")

# CUDA is optional: AUTO builds it when a CUDA compiler is found.
set(RABBIT_HAVE_CUDA OFF)
if(NOT RABBIT_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # The default architecture must be chosen before enable_language(CUDA), which otherwise sets
    # nvcc's own default (sm_75: an H200 would JIT and run no Hopper code). docs/sharding-and-gpu.md
    # "CUDA architecture": `native` when a GPU is visible, else sm_90 when this nvcc knows it.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE rabbit_smi_rc OUTPUT_VARIABLE rabbit_smi_out
        ERROR_QUIET TIMEOUT 20)
      execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --list-gpu-arch OUTPUT_VARIABLE rabbit_nvcc_archs
        ERROR_QUIET TIMEOUT 20)
      if(rabbit_smi_rc EQUAL 0 AND rabbit_smi_out MATCHES "GPU [0-9]")
        set(CMAKE_CUDA_ARCHITECTURES native CACHE STRING "CUDA architectures (rabbit: the visible GPU)")
      elseif(rabbit_nvcc_archs MATCHES "compute_90")
        set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures (rabbit: H100/H200 when no GPU is visible)")
      endif()
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(RABBIT_HAVE_CUDA ON)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 does not know nvcc 13 supports C++20
    message(STATUS "rabbit: CUDA backend enabled (${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(RABBIT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RABBIT_CUDA=ON but no CUDA compiler was found (is nvcc on PATH?)")
  else()
    message(STATUS "rabbit: no CUDA compiler found, CUDA backend disabled")
  endif()
endif()
