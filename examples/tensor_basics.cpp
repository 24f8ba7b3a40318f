// Tensors evaluate at once: add a scalar to a matrix, print it as TensorFlow does, and read
// its values back as an array (the first cell of the eager execution notebook).
#include <fusegrad/fusegrad.hpp>

#include <iostream>
#include <sstream>
#include <string>

int main() {
  fg::tensor<int> x = {{1, 2, 4, 6}, {8, 10, 7, 11}};  // tf.constant([[1, 2, 4, 6], [8, 10, 7, 11]])
  x = x + 2;                                             // tf.add(x, 2): broadcasting a scalar

  std::ostringstream out;
  out << x << '\n';  // print(x)

  // x.numpy() is an xtensor array, a copy of the values; fg::numpy_str prints them as numpy does.
  const xt::xarray<int> a = x.numpy();
  out << "x: " << fg::numpy_str(x) << '\n';
  std::cout << out.str();

  const std::string expected =
      "tensor(\n"
      "[[ 3  4  6  8]\n"
      " [10 12  9 13]], shape=(2, 4), dtype=int32)\n"
      "x: [[ 3  4  6  8]\n"
      " [10 12  9 13]]\n";
  const bool ok = out.str() == expected && x.shape() == fg::shape{2, 4} && x.dtype() == fg::dtype::int32 &&
                  a(1, 2) == 9;
  if (!ok) std::cerr << "tensor_basics: unexpected output; expected:\n" << expected;
  return ok ? 0 : 1;
}
