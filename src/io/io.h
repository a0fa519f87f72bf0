// Files on disk in one include (part of <loom/loom.h>): safetensors, model files, checkpoints,
// atomic writes and the background writer.
#pragma once

#include "loom/io/atomic_file.h"
#include "loom/io/background_writer.h"
#include "loom/io/checkpoint.h"
#include "loom/io/model_file.h"
#include "loom/io/onnx_export.h"
#include "loom/io/protobuf_writer.h"
#include "loom/io/safetensors.h"
#include "loom/io/torch_import.h"
