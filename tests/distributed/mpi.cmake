# The MPI backend's tests, run under mpiexec: one GoogleTest binary started on every rank
# (2 and 4 ranks), and jobs that fail (a rank killed, frozen or failing, mismatched calls). Needs MPI and its mpiexec.
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

  # The fault jobs: each a failure that must end the whole job within seconds, every rank's
  # error naming its cause (fault_worker/fault_worker.cpp describes them).
  add_executable(distributed_mpi_fault_worker ${CMAKE_CURRENT_LIST_DIR}/mpi/fault_worker/fault_worker.cpp)
  target_link_libraries(distributed_mpi_fault_worker PRIVATE loom::loom)
  # Building the test binary builds the program the fault jobs run too.
  add_dependencies(distributed_mpi_tests distributed_mpi_fault_worker)
  string(REPLACE ";" " " _mpiexec_flags "${LOOM_MPIEXEC_FLAGS}")
  function(_loom_mpi_fault_job name scenario within expect)
    add_test(NAME ${name}
             COMMAND ${CMAKE_COMMAND} -DMPIEXEC=${LOOM_MPIEXEC} "-DMPIEXEC_FLAGS=${_mpiexec_flags}"
                     -DPROGRAM=$<TARGET_FILE:distributed_mpi_fault_worker> -DSCENARIO=${scenario}
                     -DWITHIN=${within} "-DEXPECT=${expect}" ${ARGN}
                     -P ${CMAKE_CURRENT_LIST_DIR}/mpi/fault_worker/expect_job_fails.cmake)
    set_tests_properties(${name} PROPERTIES LABELS "cpu;distributed" TIMEOUT 120
                         ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
  endfunction()
  # Bounds: the plain build takes 1-3 s for each; a sanitizer build's start-up is slower.
  _loom_mpi_fault_job(mpi_sigkill sigkill 90 "" "-DREJECT=finished the all_reduce")
  # rank 0's error outside a collective reaches rank 1 through its abort notice at once, and both
  # leave by MPI_Abort: MPI_Finalize would wait for the other (it waited the 600 s timeout).
  _loom_mpi_fault_job(mpi_fail_outside fail-outside 40
                      "rank 0 failed: rank 0 ran out of disk;rank 1 failed: .*rank 0 ran out of disk")
  # rank 1 frozen: rank 0 fails at its 3 s timeout and ends the job, the stopped rank 1 too.
  _loom_mpi_fault_job(mpi_freeze freeze 40 "rank 0 failed: .*timed out" -DTIMEOUT=3)
  # Different sizes without LOOM_DIST_CHECK: a clean error on both ranks, no heap corruption.
  _loom_mpi_fault_job(mpi_mismatch mismatch 40
                      "rank 0 failed: .*collectives differ;rank 1 failed: .*collectives differ"
                      "-DREJECT=malloc|corrupt|Segmentation|signal 6|finished the all_reduce")
endif()
