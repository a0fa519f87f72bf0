# cmake -DMPIEXEC=... -DMPIEXEC_FLAGS="..." -DPROGRAM=... -DSCENARIO=... -DWITHIN=SECONDS
#       "-DEXPECT=regex;regex" [-DREJECT=regex] [-DTIMEOUT=SECONDS] -P expect_job_fails.cmake
# Runs PROGRAM SCENARIO under mpiexec with two ranks and passes only when the job started (both
# ranks said "reached SCENARIO"), mpiexec exited non-zero by itself within WITHIN seconds, every
# EXPECT regex matches its output and REJECT does not. TIMEOUT sets LOOM_DIST_TIMEOUT. A script
# rather than WILL_FAIL: WILL_FAIL would pass on any non-zero exit, a job that never launched
# included, and a hang would surface only as CTest's own timeout.
cmake_minimum_required(VERSION 3.24)
separate_arguments(_flags UNIX_COMMAND "${MPIEXEC_FLAGS}")
if(DEFINED TIMEOUT)
  set(ENV{LOOM_DIST_TIMEOUT} ${TIMEOUT})
endif()
string(TIMESTAMP _start "%s")
execute_process(
  COMMAND ${MPIEXEC} ${_flags} -np 2 ${PROGRAM} ${SCENARIO}
  RESULT_VARIABLE _result
  OUTPUT_VARIABLE _out
  ERROR_VARIABLE _out
  TIMEOUT 100)
string(TIMESTAMP _end "%s")
math(EXPR _seconds "${_end} - ${_start}")
message(STATUS "mpiexec (${SCENARIO}) returned '${_result}' after ${_seconds} s; its output:\n${_out}")
if(NOT _result MATCHES "^[0-9]+$")
  message(FATAL_ERROR "mpiexec did not exit by itself within 100 s: ${_result}")
endif()
if(_result EQUAL 0)
  message(FATAL_ERROR "mpiexec exited 0, but the ${SCENARIO} job must fail")
endif()
foreach(_rank 0 1)
  if(NOT _out MATCHES "fault_worker: rank ${_rank} reached ${SCENARIO}")
    message(FATAL_ERROR "rank ${_rank} never started the scenario: the job failed before it")
  endif()
endforeach()
if(_seconds GREATER WITHIN)
  message(FATAL_ERROR "the job took ${_seconds} s to end, above the ${WITHIN} s allowed")
endif()
foreach(_regex IN LISTS EXPECT)
  if(NOT _out MATCHES "${_regex}")
    message(FATAL_ERROR "the output does not match '${_regex}'")
  endif()
endforeach()
if(DEFINED REJECT AND _out MATCHES "${REJECT}")
  message(FATAL_ERROR "the output matches '${REJECT}', which it must not")
endif()
