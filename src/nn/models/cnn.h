// The two small CNNs of the zoo, for 64x64 RGB inputs [N, 3, 64, 64]. Without num_outputs (or
// with 1), the seed's binary task: one logit (train with binary_cross_entropy_with_logits;
// nn::predict applies the sigmoid); num_outputs = K > 1: K class logits (train with
// cross_entropy; predict applies the softmax), only the last Dense changing. Both default to
// Keras' initialisers because they reproduce Keras code; the head is initialised last, so the
// layers before it draw the same weights whatever num_outputs is.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/nn/sequential.h"

namespace loom::nn {

// The seed's Keras model exactly as written. Keras 2 reads Convolution2D(32, 3, 3) as 32 filters,
// kernel 3 and STRIDE 3 (the legacy positional nb_row, nb_col become kernel_size, strides):
//   Conv2d(3, 32, 3x3, stride 3)  -> [32, 21, 21]   896 params       ReLU
//   MaxPool2d(2)                  -> [32, 10, 10]
//   Flatten                       -> [3200]
//   Dense(3200, 128)              -> [128]          409,728 params   ReLU
//   Dense(128, 1)                 -> [1]            129 params       (logit)
// 410,753 parameters with one output (129 more per further output).
std::shared_ptr<Sequential> seed_cnn(int64_t num_outputs, Init init = Init::Keras,
                                     Generator* gen = nullptr);
std::shared_ptr<Sequential> seed_cnn(Init init = Init::Keras,
                                     Generator* gen = nullptr);  // one output

// The common two-convolution tutorial CNN, 'valid' padding:
//   Conv2d(3, 32, 3x3)  -> [32, 62, 62]  896 params     ReLU,  MaxPool2d(2) -> [32, 31, 31]
//   Conv2d(32, 32, 3x3) -> [32, 29, 29]  9,248 params   ReLU,  MaxPool2d(2) -> [32, 14, 14]
//   Flatten -> [6272],  Dense(6272, 128) 802,944 params ReLU,  Dense(128, 1) 129 params
// 813,217 parameters with one output (129 more per further output).
std::shared_ptr<Sequential> classic_cnn(int64_t num_outputs, Init init = Init::Keras,
                                        Generator* gen = nullptr);
std::shared_ptr<Sequential> classic_cnn(Init init = Init::Keras,
                                        Generator* gen = nullptr);  // one output

}  // namespace loom::nn
