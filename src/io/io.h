// Files on disk in one include (part of <loom/loom.h>): safetensors, model files, checkpoints.
#pragma once

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/model_file.h"
#include "io/safetensors.h"
