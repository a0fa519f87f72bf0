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

# The training-step bench's flags on the CPU (plain builds; the sanitizer builds have no bench):
# a short run with DDP over one thread rank, and a --profile-variant this run does not have,
# refused by name.
if(TARGET train_step_bench)
  add_test(NAME bench_train_step_cpu
           COMMAND train_step_bench --device cpu --model seed_cnn --batch 4 --warmup 1 --iters 2 --ddp --json)
  set_tests_properties(bench_train_step_cpu PROPERTIES LABELS cpu TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "\"variant\": \"ddp\"")
  add_test(NAME bench_train_step_unknown_profile_variant
           COMMAND train_step_bench --device cpu --model seed_cnn --batch 4 --warmup 1 --iters 2
                   --profile-variant graph)
  set_tests_properties(bench_train_step_unknown_profile_variant PROPERTIES LABELS cpu TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "this run has no variant \"graph\" \\(it has plain;")
endif()
