// The helper of the cluster tests and scripts/slurm-local.sh:
//   cluster_tool env [--visible-gpus K]  where loom's rank discovery puts this process, as one JSON
//                                        line (dist::read_launch_environment, and with K the GPU
//                                        dist::local_cuda_device picks among K visible ones), and
//                                        the CUDA_VISIBLE_DEVICES its launcher set
//   cluster_tool photos DIR              the small cat/dog photo folder the catdog tests train on
#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "catdog/photo_folder.h"

namespace {

int usage() {
  std::fprintf(stderr, "usage: cluster_tool env [--visible-gpus K] | cluster_tool photos DIR\n");
  return 2;
}

int print_environment(int visible_gpus) {
  const loom::dist::LaunchEnvironment env = loom::dist::read_launch_environment();
  nlohmann::json j = {{"launcher", env.launcher},
                      {"rank", env.rank},
                      {"world_size", env.world_size},
                      {"local_rank", env.local_rank},
                      {"local_world_size", env.local_world_size},
                      {"master_addr", env.master_addr},
                      {"master_port", env.master_port}};
  // What the launcher bound to this task (srun --gpus-per-task), beside what loom makes of it.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  j["cuda_visible_devices"] = visible ? nlohmann::json(visible) : nlohmann::json(nullptr);
  if (visible_gpus >= 0) j["cuda_device"] = loom::dist::local_cuda_device(env, visible_gpus);
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    if (command == "env" && argc == 2) return print_environment(-1);
    if (command == "env" && argc == 4 && std::string(argv[2]) == "--visible-gpus") {
      char* end = nullptr;
      const long k = std::strtol(argv[3], &end, 10);
      if (*argv[3] == '\0' || *end != '\0' || k < 0 || k > 1024) return usage();
      return print_environment(static_cast<int>(k));
    }
    if (command == "photos" && argc == 3) {
      // 48 training and 12 validation images: 6 steps an epoch of 2 ranks x batch 4.
      loom::testing::make_photo_folder(argv[2], 24, 6, 3);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_tool: %s\n", e.what());
    return 1;
  }
  return usage();
}
