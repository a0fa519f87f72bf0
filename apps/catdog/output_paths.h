// The files loom-catdog writes, checked before a run does any work: a path that a run could not
// write fails in a second with a message naming its flag, not after hours of training.
#pragma once

#include <string>

#include "commands.h"

namespace loom::catdog {

// What `train` writes: the model at the end, the checkpoint and the metrics logs during the run
// (the checkpoint and logs default to files beside --out).
struct TrainOutputs {
  std::string model;
  std::string checkpoint;
  std::string metrics_csv;
  std::string metrics_jsonl;  // always beside metrics_csv
};
TrainOutputs train_outputs(const TrainArgs& a);

// Throws "<flag> <path>: <problem>" unless `path` can be written as io::write_file_atomically
// writes (a temporary file beside it, renamed over it): the path is not empty, not a folder and
// not a FIFO or device that the rename would replace, and its folder exists and takes a new
// file. The probe for that is a file of another name, created and removed: an existing target
// is never opened.
void check_output_path(const std::string& flag, const std::string& path);

// check_output_path for every TrainOutputs file, and that no two of them are the same file (the
// model written at the end would replace the checkpoint).
void check_train_outputs(const TrainArgs& a);

}  // namespace loom::catdog
