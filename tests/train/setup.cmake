# tests/train: the multi-rank fit tests run thread ranks that a bug could leave waiting on each
# other; the group's own timeout is minutes, so CTest's cuts a hang short first.
set(_room_timeout 180)

# bench/step_table.py (issue 35's table of training steps) on recorded sample lines: python3's
# standard library only, so a plain CPU test. Time to accuracy's log reader and the profile's
# kernel comparison (bench/kernel_diff.py) and the recipe sweep (bench/recipe_sweep.py) likewise.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME bench_step_table COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/step_table_test.py)
  set_tests_properties(bench_step_table PROPERTIES LABELS cpu TIMEOUT 60)
  add_test(NAME bench_time_to_accuracy
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/time_to_accuracy_test.py)
  set_tests_properties(bench_time_to_accuracy PROPERTIES LABELS cpu TIMEOUT 60)
  add_test(NAME bench_kernel_diff COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/kernel_diff_test.py)
  set_tests_properties(bench_kernel_diff PROPERTIES LABELS cpu TIMEOUT 60)
  add_test(NAME bench_recipe_sweep COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/recipe_sweep_test.py)
  set_tests_properties(bench_recipe_sweep PROPERTIES LABELS cpu TIMEOUT 60)
endif()
