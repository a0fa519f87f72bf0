# tests/cluster: loom under the schedulers clusters use (label cluster). slurm_local starts a
# private one-node Slurm (munged, slurmctld, slurmd; scripts/slurm-local.sh) and trains
# loom-catdog under srun and sbatch; slurm_local_cleanup makes one of its jobs fail and checks
# that no daemon outlives the run; cluster_recipes checks that deploy/'s recipes set the
# environment loom's rank discovery reads. A test that cannot run here says why and is skipped
# (exit 77); with LOOM_CLUSTER_TESTS=required (CI) that is a failure instead.
add_executable(cluster_tool ${CMAKE_CURRENT_LIST_DIR}/cluster_tool.cpp)
target_link_libraries(cluster_tool PRIVATE loom::loom nlohmann_json::nlohmann_json)
target_include_directories(cluster_tool PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
