// The data pipeline in one include (part of <loom/loom.h>): datasets, decoding, augmentation,
// samplers and the DataLoader.
#pragma once

#include "loom/data/augment.h"
#include "loom/data/bad_input.h"
#include "loom/data/data_loader.h"
#include "loom/data/dataset.h"
#include "loom/data/decode.h"
#include "loom/data/encode.h"
#include "loom/data/fashion_mnist.h"
#include "loom/data/image_folder.h"
#include "loom/data/memory_dataset.h"
#include "loom/data/resize.h"
#include "loom/data/sampler.h"
