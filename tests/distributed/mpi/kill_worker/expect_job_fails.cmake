# cmake -DMPIEXEC=... -DMPIEXEC_FLAGS="..." -DPROGRAM=... -P expect_job_fails.cmake
# Runs PROGRAM under mpiexec with two ranks (rank 1 SIGKILLs itself) and passes only when the
# job started, reached the kill, nobody finished the all_reduce, and mpiexec exited non-zero
# within the limit. A script rather than WILL_FAIL: WILL_FAIL would pass on any non-zero exit,
# a job that never launched included, and a hang would surface only as CTest's own timeout.
cmake_minimum_required(VERSION 3.24)
separate_arguments(_flags UNIX_COMMAND "${MPIEXEC_FLAGS}")
string(TIMESTAMP _start "%s")
execute_process(
  COMMAND ${MPIEXEC} ${_flags} -np 2 ${PROGRAM}
  RESULT_VARIABLE _result
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _out
  TIMEOUT 90)
string(TIMESTAMP _end "%s")
math(EXPR _seconds "${_end} - ${_start}")
message(STATUS "mpiexec returned '${_result}' after ${_seconds} s; its output:\n${_out}")
if(NOT _result MATCHES "^[0-9]+$")
  message(FATAL_ERROR "mpiexec did not exit by itself within 90 s: ${_result}")
endif()
if(_result EQUAL 0)
  message(FATAL_ERROR "mpiexec exited 0 although rank 1 was killed")
endif()
if(NOT _out MATCHES "kill_worker: rank 1 kills itself")
  message(FATAL_ERROR "the job failed before rank 1 reached the kill")
endif()
if(_out MATCHES "finished the all_reduce")
  message(FATAL_ERROR "an all_reduce completed without rank 1")
endif()
