// Dynamic control flow: the Collatz sequence from 12, looping while a tensor condition holds.
// TensorFlow's `/` gives float64 for int32 operands, and fg::truediv is that operator.
#include <fusegrad/fusegrad.hpp>

#include <concepts>
#include <iostream>
#include <sstream>
#include <string>

int main() {
  const fg::tensor<int> start = 12;  // a = tf.constant(12)
  // In TensorFlow `a = a / 2` turns the int32 tensor into a float64 one at the first halving.
  // A C++ variable keeps one type, so `a` holds float64 from the start, as truediv would make it.
  static_assert(std::same_as<fg::value_type_of<decltype(fg::truediv(start, 2))>, double>);
  fg::tensor<double> a = fg::cast<double>(start);

  std::ostringstream out;
  while (!(a == 1)) {     // while not tf.equal(a, 1)
    if (a % 2 == 0)       //   if tf.equal(a % 2, 0)
      a = fg::truediv(a, 2);  //     a = a / 2
    else
      a = 3 * a + 1;      //   else: a = 3 * a + 1
    out << a << '\n';     //   print(a)
  }
  std::cout << out.str();

  std::string expected;
  for (const char* v : {"6.0", "3.0", "10.0", "5.0", "16.0", "8.0", "4.0", "2.0", "1.0"})
    expected += std::string("tensor(") + v + ", shape=(), dtype=float64)\n";
  const bool ok = out.str() == expected;
  if (!ok) std::cerr << "collatz: unexpected output; expected:\n" << expected;
  return ok ? 0 : 1;
}
