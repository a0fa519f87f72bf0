# tests/cluster: loom under the schedulers clusters use (label cluster). slurm_local starts a
# private one-node Slurm (munged, slurmctld, slurmd; scripts/slurm-local.sh) and trains
# loom-catdog under srun and sbatch; slurm_local_cleanup makes one of its jobs fail and checks
# that no daemon outlives the run; slurm_local_arguments, that the script refuses a bad --build
# or --work before it makes anything; cluster_recipes checks that deploy/'s recipes set the
# environment loom's rank discovery reads. A test that cannot run here says why and is skipped
# (exit 77); with LOOM_CLUSTER_TESTS=required (CI) that is a failure instead.
add_executable(cluster_tool ${CMAKE_CURRENT_LIST_DIR}/cluster_tool.cpp)
target_link_libraries(cluster_tool PRIVATE loom::loom nlohmann_json::nlohmann_json)
target_include_directories(cluster_tool PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)

# The Slurm tests take about 10 s; their own deadline (LOOM_SLURM_LOCAL_SECONDS) ends a stuck job
# well before CTest's TIMEOUT, so that the script, not CTest's kill, stops the daemons. They take
# turns (one cluster at a time).
if(TARGET loom-catdog)
  add_test(NAME slurm_local
           COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/slurm-local.sh --build ${PROJECT_BINARY_DIR})
  add_test(NAME slurm_local_cleanup
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm_cleanup_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  set_tests_properties(slurm_local slurm_local_cleanup PROPERTIES
                       LABELS cluster TIMEOUT 240 SKIP_RETURN_CODE 77 RESOURCE_LOCK slurm_local
                       ENVIRONMENT LOOM_SLURM_LOCAL_SECONDS=150)
  add_test(NAME slurm_local_arguments
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm_arguments_test.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
  set_tests_properties(slurm_local_arguments PROPERTIES LABELS cluster TIMEOUT 60)
endif()

find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cluster_recipes
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/recipes_test.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:cluster_tool>)
else()
  add_test(NAME cluster_recipes COMMAND sh -c "echo 'cluster_recipes: SKIPPED: CMake found no python3'; exit 77")
endif()
set_tests_properties(cluster_recipes PROPERTIES LABELS cluster TIMEOUT 60 SKIP_RETURN_CODE 77)
