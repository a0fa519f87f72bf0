// loom::dist in one include: process groups, their backends and the launches.
#pragma once

#include "loom/distributed/ddp.h"
#include "loom/distributed/launch.h"
#include "loom/distributed/nccl_group.h"
#include "loom/distributed/pipeline.h"
#include "loom/distributed/process_group.h"
#include "loom/distributed/reduce_op.h"
#include "loom/distributed/store.h"
#include "loom/distributed/threads_group.h"
#include "loom/distributed/work.h"
