# tests/train: the multi-rank fit tests run thread ranks that a bug could leave waiting on each
# other; the group's own timeout is minutes, so CTest's cuts a hang short first.
set(_room_timeout 180)

# bench/step_table.py (issue 35's table of training steps) on recorded sample lines: python3's
# standard library only, so a plain CPU test. Time to accuracy's log reader likewise.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME bench_step_table COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/step_table_test.py)
  set_tests_properties(bench_step_table PROPERTIES LABELS cpu TIMEOUT 60)
  add_test(NAME bench_time_to_accuracy
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/time_to_accuracy_test.py)
  set_tests_properties(bench_time_to_accuracy PROPERTIES LABELS cpu TIMEOUT 60)
endif()
