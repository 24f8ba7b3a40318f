// Misuse: summing a bool tensor without converting it first.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<bool> b = {true, false};
  return static_cast<int>(fg::reduce_sum(b).size());
}
