// How the data pipeline treats inputs it cannot use (a corrupt file, an unreadable folder):
// BadSample is the error that names the file, OnBadInput says whether to skip it or to throw.
#pragma once

#include <string>

#include "loom/tensor/error.h"

namespace loom::data {

// Skip: the file is left out with one warning line on stderr and counted; Throw: strict mode,
// the loom::Error naming the file reaches the caller.
enum class OnBadInput { Skip, Throw };

// One sample that cannot be used (its file does not decode, is too large, ...). The loader
// skips exactly these in OnBadInput::Skip mode; any other exception is a real failure.
class BadSample : public Error {
 public:
  using Error::Error;
};

// Writes "loom::data: warning: <message>" as one line on stderr (one write, so lines from
// several worker threads never interleave), control characters shown as \xNN.
void warn(const std::string& message);

}  // namespace loom::data
