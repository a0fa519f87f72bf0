// The public API of loom in one include: #include <loom/loom.h>.
#pragma once

#include "tensor/autograd.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/random.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tensor/cuda/caching_allocator.h"
#include "tensor/cuda/runtime.h"
#include "ops/ops.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "data/data.h"
#include "io/io.h"
#include "distributed/distributed.h"
#include "train/train.h"
