# The MPI backend's tests, run under mpiexec: one GoogleTest binary started on every rank
# (2 and 4 ranks), and a job whose rank 1 is SIGKILLed. Needs MPI and its mpiexec.
if(LOOM_WITH_MPI AND LOOM_MPIEXEC)
  # For a container without ssh or a network: root is allowed, ranks may outnumber cores and
  # are not pinned to them (pinning oversubscribed ranks to one core each would serialise
  # them), and only shared memory and self carry messages, so no interface is probed.
  set(LOOM_MPIEXEC_FLAGS --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader)

  file(GLOB _mpi_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/mpi/*.cpp)
  add_executable(distributed_mpi_tests ${_mpi_test_sources})
  target_link_libraries(distributed_mpi_tests PRIVATE loom_testing)
  foreach(_np 2 4)
    add_test(NAME mpi_collectives_np${_np}
             COMMAND ${LOOM_MPIEXEC} ${LOOM_MPIEXEC_FLAGS} -np ${_np} $<TARGET_FILE:distributed_mpi_tests>)
    # Open MPI leaks at MPI_Finalize by design, much of it from components it dlopens and has
    # unloaded by the time LeakSanitizer looks (their frames are "<unknown module>", which no
    # suppression can name), so under AddressSanitizer these jobs check memory errors, not leaks.
    set_tests_properties(mpi_collectives_np${_np} PROPERTIES LABELS "cpu;distributed" TIMEOUT 120
                         ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
  endforeach()

  add_executable(distributed_mpi_kill_worker ${CMAKE_CURRENT_LIST_DIR}/mpi/kill_worker/kill_worker.cpp)
  target_link_libraries(distributed_mpi_kill_worker PRIVATE loom::loom)
  # Building the test binary builds the program mpi_sigkill runs too.
  add_dependencies(distributed_mpi_tests distributed_mpi_kill_worker)
  string(REPLACE ";" " " _mpiexec_flags "${LOOM_MPIEXEC_FLAGS}")
  add_test(NAME mpi_sigkill
           COMMAND ${CMAKE_COMMAND} -DMPIEXEC=${LOOM_MPIEXEC} "-DMPIEXEC_FLAGS=${_mpiexec_flags}"
                   -DPROGRAM=$<TARGET_FILE:distributed_mpi_kill_worker>
                   -P ${CMAKE_CURRENT_LIST_DIR}/mpi/kill_worker/expect_job_fails.cmake)
  set_tests_properties(mpi_sigkill PROPERTIES LABELS "cpu;distributed" TIMEOUT 120)
endif()
