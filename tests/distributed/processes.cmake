# The worker program the TCP launch tests start once per rank (worker/dist_worker.cpp), and how
# distributed_tests finds it: its path as LOOM_DIST_WORKER, and a dependency so it is built.
add_executable(dist_worker ${CMAKE_CURRENT_LIST_DIR}/worker/dist_worker.cpp)
target_link_libraries(dist_worker PRIVATE loom::loom)

# This file is read (from setup.cmake) before tests/CMakeLists.txt makes distributed_tests, so
# the wiring waits for the end of the directory.
function(_loom_wire_dist_worker)
  if(TARGET distributed_tests)
    target_compile_definitions(distributed_tests PRIVATE LOOM_DIST_WORKER="$<TARGET_FILE:dist_worker>")
    add_dependencies(distributed_tests dist_worker)
  endif()
endfunction()
cmake_language(DEFER CALL _loom_wire_dist_worker)
