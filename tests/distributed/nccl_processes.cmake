# The program the NCCL process tests (nccl_process_multigpu_test.cpp) start once per GPU
# (worker/nccl_worker.cpp, with a kernel that faults on purpose in worker/sticky_fault.cu), and
# how distributed_multigpu_tests finds it: its path as LOOM_NCCL_WORKER, and a dependency so it
# is built. Both call CUDA directly (the driver's primary-context state, cudaDeviceCanAccessPeer),
# so both exist only with CUDA; without it the process tests skip.
if(LOOM_WITH_CUDA AND LOOM_GPU_TESTS)
  add_executable(nccl_worker ${CMAKE_CURRENT_LIST_DIR}/worker/nccl_worker.cpp
                             ${CMAKE_CURRENT_LIST_DIR}/worker/sticky_fault.cu)
  target_include_directories(nccl_worker PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(nccl_worker PRIVATE loom_testing CUDA::cuda_driver)
  # One CUDA runtime in the process, libloom's.
  set_target_properties(nccl_worker PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
endif()

# This file is read (from setup.cmake) before tests/CMakeLists.txt makes the multigpu binary,
# so the wiring waits for the end of the directory.
function(_loom_wire_nccl_worker)
  if(TARGET distributed_multigpu_tests AND TARGET nccl_worker)
    target_compile_definitions(distributed_multigpu_tests PRIVATE LOOM_NCCL_WORKER="$<TARGET_FILE:nccl_worker>"
                                                                  LOOM_TESTS_CUDA_RUNTIME=1)
    target_link_libraries(distributed_multigpu_tests PRIVATE CUDA::cudart)
    add_dependencies(distributed_multigpu_tests nccl_worker)
  endif()
endfunction()
cmake_language(DEFER CALL _loom_wire_nccl_worker)
