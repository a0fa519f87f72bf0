// Everything of loom::nn: modules, layers, Sequential, specs, initialisers, losses, the zoo.
#pragma once

#include "loom/nn/activation.h"
#include "loom/nn/batch_norm.h"
#include "loom/nn/conv.h"
#include "loom/nn/dropout.h"
#include "loom/nn/init.h"
#include "loom/nn/linear.h"
#include "loom/nn/loss.h"
#include "loom/nn/models/cnn.h"
#include "loom/nn/models/predict.h"
#include "loom/nn/models/resnet.h"
#include "loom/nn/module.h"
#include "loom/nn/named_tensors.h"
#include "loom/nn/pooling.h"
#include "loom/nn/sequential.h"
#include "loom/nn/spec.h"
#include "loom/nn/summary.h"
