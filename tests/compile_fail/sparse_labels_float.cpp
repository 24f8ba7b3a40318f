// Misuse: float labels for the sparse cross-entropy, which takes class indices.
#include <fusegrad/eager/cross_entropy.hpp>

int main() {
  fg::tensor<float> logits = {{1.f, 2.f}};
  fg::tensor<float> labels = {1.f};
  auto loss = fg::sparse_softmax_cross_entropy_with_logits(labels, logits);
  return static_cast<int>(loss.shape().rank());
}
