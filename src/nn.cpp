// libfusegrad's Keras code (Note [shared layer code], nn/activations.hpp): the training ops,
// the activations and the fused bias add + activation of dense and conv2d, the losses and the
// regularizers, float32 and float64, the metrics that compile names, and a sequential's fit,
// evaluate and predict, compiled once here for programs built in package mode.
#include <fusegrad/nn.hpp>

namespace fusegrad {
FG_SHARED_TRAINING(, float)
FG_SHARED_TRAINING(, double)
}  // namespace fusegrad

namespace fusegrad::nn {
FG_SHARED_ACTIVATIONS(, float)
FG_SHARED_ACTIVATIONS(, double)
FG_SHARED_FIT()
FG_SHARED_SEQUENTIAL(, float)
FG_SHARED_SEQUENTIAL(, std::int32_t)
FG_SHARED_SEQUENTIAL(, std::int64_t)
template tensor<float> regularizers::regularizer::penalty<float>(const tensor<float>&) const;
template tensor<double> regularizers::regularizer::penalty<double>(const tensor<double>&) const;
}  // namespace fusegrad::nn

namespace fusegrad::nn::losses {
FG_SHARED_LOSSES(, float)
FG_SHARED_LOSSES(, double)
}  // namespace fusegrad::nn::losses
