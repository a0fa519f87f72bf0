// Every differentiable op of loom, one family per header.
#pragma once

#include "ops/activation.h"
#include "ops/batch_norm.h"
#include "ops/conv.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/pool.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"
