// Everything of loom::nn: modules, layers, Sequential, specs, initialisers, losses, the zoo.
#pragma once

#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/models/cnn.h"
#include "nn/models/predict.h"
#include "nn/models/resnet.h"
#include "nn/module.h"
#include "nn/named_tensors.h"
#include "nn/pooling.h"
#include "nn/sequential.h"
#include "nn/spec.h"
