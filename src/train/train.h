// The training room in one include (part of <loom/loom.h>): fit/evaluate/predict, the training
// steps, callbacks, History and the progress display.
#pragma once

#include "loom/train/callback.h"
#include "loom/train/callbacks.h"
#include "loom/train/captured_step.h"
#include "loom/train/eager_step.h"
#include "loom/train/fit.h"
#include "loom/train/history.h"
#include "loom/train/pipeline_step.h"
#include "loom/train/precision.h"
#include "loom/train/preemption.h"
#include "loom/train/progress.h"
#include "loom/train/tensorboard.h"
#include "loom/train/train_step.h"
