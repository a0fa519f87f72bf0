// `loom-scaling simulate` (simulate_command.h): reads the files, runs simulate.h, writes the
// text, JSON and a log-log chart of the predicted speedup.
#include "simulate_command.h"

#include <filesystem>
#include <iostream>

#include "chart.h"
#include "simulate.h"

namespace loom::scaling {

namespace {

void write_text(const std::string& path, const std::string& text) {
  io::write_file_atomically(path,
                            [&](const io::ByteSink& sink) { sink(text.data(), text.size()); });
}

ChartSpec simulation_chart(const SimReport& report) {
  ChartSpec spec;
  spec.title = report.run_model + ": measured and simulated speedup against GPU count";
  spec.y_label = "speedup over one GPU";
  spec.log2_axes = true;
  ChartSeries ideal, measured, simulated;
  ideal.label = "ideal (speedup = GPUs)";
  ideal.r = ideal.g = ideal.b = 140;
  ideal.dashed = true;
  ideal.markers = false;
  measured.label = "measured here";
  measured.r = 31, measured.g = 119, measured.b = 180;
  measured.line = false;
  simulated.label = "simulated (alpha-beta model, docs/scaling.md)";
  simulated.r = 44, simulated.g = 160, simulated.b = 44;
  double largest = 2;
  for (const SimRow& r : report.rows) {
    (r.simulated ? simulated : measured).points.emplace_back(r.gpus, std::max(r.speedup, 1e-3));
    largest = std::max<double>(largest, r.gpus);
  }
  ideal.points = {{1, 1}, {largest, largest}};
  spec.series = {ideal};
  if (!measured.points.empty()) spec.series.push_back(measured);
  if (!simulated.points.empty()) spec.series.push_back(simulated);
  return spec;
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateArgs& a) {
  CLI::App* sim =
      app.add_subcommand("simulate", "predict speedup on larger clusters from a measured run");
  sim->add_option("--gpus", a.gpus, "GPU counts to predict")->delimiter(',')->capture_default_str();
  sim->add_option("--from", a.from, "a loom-scaling report.json")->required();
  sim->add_option("--collectives", a.collectives,
                  "collectives_bench --json lines to fit the intra-node link to");
  sim->add_option("--gpus-per-node", a.gpus_per_node,
                  "GPUs per node (NVLink within, the network between)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sim->add_option("--inter-gbps", a.inter_gbps,
                  "network line rate per GPU in Gb/s (default 400: one NDR InfiniBand NIC)");
  sim->add_option("--inter-latency-us", a.inter_latency_us,
                  "network latency of one step in us (default 5)");
  sim->add_option("--intra-busbw", a.intra_busbw_gbps,
                  "intra-node all-reduce bus bandwidth in GB/s (replaces the fit)");
  sim->add_option("--intra-latency-us", a.intra_latency_us,
                  "intra-node latency of one ring step in us (with --intra-busbw)");
  sim->add_option("--overlap", a.overlap,
                  "fraction of communication hidden behind backward (default: measured)");
  sim->add_option("--out", a.out, "folder for simulation.txt, simulation.json and simulation.png");
  return sim;
}

int run_simulate_command(const SimulateArgs& a) {
  SimulateConfig c;
  c.gpus = a.gpus;
  c.run_json_text = io::read_file(a.from);
  c.run_source = a.from;
  if (!a.collectives.empty()) {
    c.collectives_jsonl_text = io::read_file(a.collectives);
    c.collectives_source = a.collectives;
  }
  c.gpus_per_node = a.gpus_per_node;
  if (a.intra_busbw_gbps) {
    c.intra = LinkModel{a.intra_latency_us.value_or(kDefaultIntraAlphaUs), *a.intra_busbw_gbps,
                        "given: --intra-busbw"};
  } else {
    LOOM_CHECK(!a.intra_latency_us, "--intra-latency-us goes with --intra-busbw");
  }
  c.inter_gbit_per_s = a.inter_gbps;
  c.inter_alpha_us = a.inter_latency_us;
  c.overlap = a.overlap;
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    LOOM_CHECK(std::filesystem::is_directory(a.out), "--out ", a.out, " is not a folder");
  }
  const SimReport report = simulate(c);
  const std::string text = simulate_text(report);
  std::cout << text;
  if (!a.out.empty()) {
    write_text(a.out + "/simulation.txt", text);
    write_text(a.out + "/simulation.json", simulate_json(report));
    const std::vector<uint8_t> png = chart_png(simulation_chart(report));
    write_text(a.out + "/simulation.png", std::string(png.begin(), png.end()));
  }
  return 0;
}

}  // namespace loom::scaling
