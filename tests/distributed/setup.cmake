# tests/distributed: every test is labelled distributed too, and none may run long: a hang is
# a failure within two minutes. Tests that start several processes (mpirun, the TCP launch)
# are added by the files included below.
set(_room_labels distributed)
# The rank-thread tests set OpenMP's thread count for their single-threaded references.
set(_room_links OpenMP::OpenMP_CXX)
set(_room_timeout 120)
foreach(_part processes mpi nccl_processes)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${_part}.cmake)
    include(${CMAKE_CURRENT_LIST_DIR}/${_part}.cmake)
  endif()
endforeach()
