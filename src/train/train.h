// The training room in one include (part of <loom/loom.h>): fit/evaluate/predict, callbacks,
// History and the progress display.
#pragma once

#include "train/callback.h"
#include "train/callbacks.h"
#include "train/captured_step.h"
#include "train/fit.h"
#include "train/history.h"
#include "train/progress.h"
#include "train/tensorboard.h"
