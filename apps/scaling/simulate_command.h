// `loom-scaling simulate`: its flags (CLI11) and its run, over simulate.h.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace loom::scaling {

struct SimulateArgs {
  std::vector<int> gpus{16, 64, 256, 1024};
  std::string from;         // a loom-scaling report.json
  std::string collectives;  // collectives_bench --json lines (optional)
  int gpus_per_node = 8;
  std::optional<double> inter_gbps, inter_latency_us, intra_busbw_gbps, intra_latency_us, overlap;
  std::string out;  // a folder for simulation.txt, simulation.json and simulation.png
};

// Adds the subcommand to `app`, its flags bound to `args`.
CLI::App* add_simulate_command(CLI::App& app, SimulateArgs& args);
// Prints the prediction (and writes it under args.out); returns the exit status.
int run_simulate_command(const SimulateArgs& args);

}  // namespace loom::scaling
