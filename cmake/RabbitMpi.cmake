# MPI is optional (docs/mpi.md): AUTO builds src/mpi when find_package(MPI) finds C++ MPI (Debian:
# libopenmpi-dev). Only rabbit_mpi links MPI, privately: no public header includes mpi.h, so the
# installed package and the other modules need no MPI.
set(RABBIT_HAVE_MPI OFF)
if(NOT RABBIT_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(RABBIT_HAVE_MPI ON)
    message(STATUS "rabbit: MPI enabled (${MPI_CXX_VERSION}, ${MPI_CXX_COMPILER})")
  elseif(RABBIT_MPI STREQUAL "ON")
    message(FATAL_ERROR "RABBIT_MPI=ON but no C++ MPI was found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "rabbit: no C++ MPI found, MPI disabled")
  endif()
endif()
