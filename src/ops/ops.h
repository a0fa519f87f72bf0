// Every differentiable op of loom, one family per header.
#pragma once

#include "loom/ops/activation.h"
#include "loom/ops/batch_norm.h"
#include "loom/ops/conv.h"
#include "loom/ops/dropout.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/flip.h"
#include "loom/ops/linalg.h"
#include "loom/ops/one_hot.h"
#include "loom/ops/pool.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape_ops.h"
#include "loom/ops/softmax.h"
#include "loom/ops/warm_up.h"
