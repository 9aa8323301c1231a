function(rabbit_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unknown-pragmas>)
  # GCC 12 reports false "may be used uninitialized" warnings inside its own AVX-512 intrinsics
  # when Eigen's packet code is inlined (-march=native); they drown real warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
  endif()
  if(RABBIT_NATIVE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()
endfunction()

if(RABBIT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# rabbit_module(<dir> [STATIC] DEPS ...): one library per source folder src/<dir>, named
# rabbit_<dir with / replaced by _>, with public headers in include/rabbit/<dir>. Shared by default:
# the executables and the CUDA plugin (opened at run time) then use one copy of every module — one
# logger, one set of exception types (docs/architecture.md "Libraries and the CUDA plugin").
# STATIC (the CUDA sources) makes an archive linked into one shared object (the plugin).
function(rabbit_module dir)
  cmake_parse_arguments(M "STATIC" "" "DEPS" ${ARGN})
  string(REPLACE "/" "_" name "rabbit_${dir}")
  file(GLOB srcs CONFIGURE_DEPENDS
    "${PROJECT_SOURCE_DIR}/src/${dir}/*.cpp" "${PROJECT_SOURCE_DIR}/src/${dir}/*.cu")
  if(srcs)
    if(M_STATIC)
      add_library(${name} STATIC ${srcs})
    else()
      add_library(${name} SHARED ${srcs})
      set_property(GLOBAL APPEND PROPERTY RABBIT_SHARED_MODULES ${name})
    endif()
    # The installed headers are in <prefix>/include (cmake/RabbitInstall.cmake).
    target_include_directories(${name} PUBLIC
      "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>" "$<INSTALL_INTERFACE:include>")
    target_link_libraries(${name} PUBLIC ${M_DEPS})
    # Exported as rabbit::<dir with / replaced by _> (rabbit::io, rabbit::backend_cpu).
    string(REPLACE "/" "_" export_name "${dir}")
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON
      CUDA_SEPARABLE_COMPILATION OFF EXPORT_NAME ${export_name})
    rabbit_warnings(${name})
    if(RABBIT_NATIVE)
      # A program built against the installed libraries must use the same vector width: Eigen
      # objects passed between code built with and without -march=native disagree on alignment
      # (docs/install.md "Building against the installed libraries").
      target_compile_options(${name} INTERFACE
        "$<INSTALL_INTERFACE:$<$<COMPILE_LANGUAGE:CXX>:-march=native>>")
    endif()
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE
      "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>" "$<INSTALL_INTERFACE:include>")
    target_link_libraries(${name} INTERFACE ${M_DEPS})
  endif()
endfunction()
