// A small convolutional classifier trained by hand with the neural-network ops (docs/guide.md,
// "Neural-network ops"): conv2d, relu, max_pool2d, a dense layer and the sparse softmax
// cross-entropy, differentiated by a tape and updated by gradient descent. The labels are a
// function of the images (which half is brighter), so the loss must fall.
#include <fusegrad/nn.hpp>

#include <cstdint>
#include <cstdio>

int main() {
  const std::size_t batch = 32;
  const fg::tensor<float> images = fg::random::uniform<float>({batch, 8, 8, 1}, 1);  // NHWC
  // Label 1 when the left half of an image is brighter than the right half, else 0.
  const fg::tensor<float> left = fg::reduce_sum(images(fg::all(), fg::all(), fg::slice::to(4)), {1, 2, 3});
  const fg::tensor<float> right = fg::reduce_sum(images(fg::all(), fg::all(), fg::slice::from(4)), {1, 2, 3});
  const fg::tensor<std::int64_t> labels = fg::cast<std::int64_t>(left > right);

  fg::variable<float> filters(fg::random::normal<float>({3, 3, 1, 4}, 2) * 0.5f, "conv/kernel");  // HWIO
  fg::variable<float> kernel(fg::random::normal<float>({4 * 4 * 4, 2}, 3) * 0.1f, "dense/kernel");
  fg::variable<float> bias(fg::zeros<float>({2}), "dense/bias");
  auto loss = [&] {
    const fg::tensor<float> h = fg::max_pool2d(fg::relu(fg::conv2d(images, filters, 1, "SAME")), 2, 2, "VALID");
    const fg::tensor<float> logits = fg::bias_add(fg::matmul(fg::reshape(h, {batch, 64}), kernel), bias);
    return fg::tensor<float>(fg::reduce_mean(fg::sparse_softmax_cross_entropy_with_logits(labels, logits)));
  };

  const float first = loss().item();
  for (int step = 0; step < 60; ++step) {
    fg::gradient_tape tape;
    const fg::tensor<float> l = loss();
    auto [df, dk, db] = tape.gradient(l, std::tie(filters, kernel, bias));
    filters.assign_sub(0.5f * df);
    kernel.assign_sub(0.5f * dk);
    bias.assign_sub(0.5f * db);
    if (step % 20 == 0) std::printf("step %2d: loss %.4f\n", step, l.item());
  }
  const float last = loss().item();
  std::printf("loss: %.4f -> %.4f\n", first, last);
  const bool ok = last < 0.7f * first;
  if (!ok) std::fprintf(stderr, "conv_net_step: expected the loss to fall below 0.7 of its first value\n");
  return ok ? 0 : 1;
}
