// Operations return values at once: multiply a 1x1 matrix by itself and print the result,
// both as a tensor and formatted into a message (the guide's first example).
#include <fusegrad/fusegrad.hpp>

#include <iostream>
#include <sstream>

int main() {
  const fg::tensor<float> x = {{2.f}};            // x = [[2.]]: a 1x1 matrix
  const fg::tensor<float> m = fg::matmul(x, x);       // m = tf.matmul(x, x)

  std::ostringstream out;
  out << m << '\n';  // print(m)
  // print("hello, {}".format(m)) shows the values as numpy does.
  out << "hello, " << fg::numpy_str(m) << '\n';
  std::cout << out.str();

  const char* expected = "tensor([[4.]], shape=(1, 1), dtype=float32)\nhello, [[4.]]\n";
  const bool ok = out.str() == expected && m.item() == 4.0f;
  if (!ok) std::cerr << "hello_matmul: unexpected output; expected:\n" << expected;
  return ok ? 0 : 1;
}
