// The data pipeline in one include (part of <loom/loom.h>): datasets, decoding, augmentation,
// samplers and the DataLoader.
#pragma once

#include "data/augment.h"
#include "data/bad_input.h"
#include "data/data_loader.h"
#include "data/dataset.h"
#include "data/decode.h"
#include "data/encode.h"
#include "data/fashion_mnist.h"
#include "data/image_folder.h"
#include "data/memory_dataset.h"
#include "data/resize.h"
#include "data/sampler.h"
