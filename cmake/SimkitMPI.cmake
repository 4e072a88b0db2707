# MPI ranks (issue 35 part 2): libsimkit_mpi (include/simkit/mpi.hpp, mpi_index.hpp, src/mpi/) and
# the CLI's `mpirun -n P simkit knn` and `index build|search`, built when an MPI with its C++
# compiler wrapper flags is found (Debian: libopenmpi-dev openmpi-bin, which scripts/setup.sh
# installs). SIMKIT_MPI=AUTO builds it when found, ON requires it, OFF leaves it out; without it
# everything else builds and runs as before.
set(SIMKIT_MPI AUTO CACHE STRING "Build the MPI entry points (simkit::mpi, mpirun simkit knn): AUTO (when MPI is found), ON or OFF")
set_property(CACHE SIMKIT_MPI PROPERTY STRINGS AUTO ON OFF)
set(SIMKIT_HAVE_MPI 0)
set(SIMKIT_MPI_DESCRIPTION "off")
if(NOT SIMKIT_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(SIMKIT_HAVE_MPI 1)
    set(SIMKIT_MPI_DESCRIPTION "on (MPI ${MPI_CXX_VERSION}; simkit::mpi, mpirun simkit knn and index build/search)")
    message(STATUS "simkit: MPI on (MPI ${MPI_CXX_VERSION}, ${MPI_CXX_LIBRARIES})")
  elseif(SIMKIT_MPI STREQUAL "ON")
    message(FATAL_ERROR "SIMKIT_MPI=ON but no MPI was found (scripts/setup.sh installs libopenmpi-dev openmpi-bin)")
  else()
    set(SIMKIT_MPI_DESCRIPTION "off (no MPI found at configure time)")
    message(STATUS "simkit: MPI off (no MPI; scripts/setup.sh installs libopenmpi-dev openmpi-bin)")
  endif()
else()
  set(SIMKIT_MPI_DESCRIPTION "off (SIMKIT_MPI=OFF)")
  message(STATUS "simkit: MPI off (SIMKIT_MPI=OFF)")
endif()
