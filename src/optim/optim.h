// loom::optim in one include: optimizers, learning-rate schedules, gradient clipping.
#pragma once

#include "optim/adam.h"
#include "optim/clip_grad.h"
#include "optim/fused_update.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
