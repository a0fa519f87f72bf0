// loom::optim in one include: optimizers, learning-rate schedules, gradient clipping.
#pragma once

#include "loom/optim/adam.h"
#include "loom/optim/clip_grad.h"
#include "loom/optim/fused_update.h"
#include "loom/optim/lr_scheduler.h"
#include "loom/optim/optimizer.h"
#include "loom/optim/options.h"
#include "loom/optim/sgd.h"
