// loom::dist in one include: process groups, their backends and the launches.
#pragma once

#include "distributed/ddp.h"
#include "distributed/launch.h"
#include "distributed/nccl_group.h"
#include "distributed/process_group.h"
#include "distributed/reduce_op.h"
#include "distributed/store.h"
#include "distributed/threads_group.h"
#include "distributed/work.h"
