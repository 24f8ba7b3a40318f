// Dynamic control flow: fizzbuzz over tensors, with conditions that depend on tensor values
// evaluated as the program runs (the eager execution guide's example).
#include <fusegrad/fusegrad.hpp>

#include <iostream>
#include <sstream>

// Prints fizzbuzz from 1 to max_num to `out`; returns the counter tensor's final value.
int fizzbuzz(int max, std::ostream& out) {
  fg::tensor<int> counter = 0;
  const fg::tensor<int> max_num = max;  // tf.convert_to_tensor(max_num)
  for (int n = 1; n <= max_num.item(); ++n) {
    const fg::tensor<int> num = n;
    if (int(num % 3) == 0 && int(num % 5) == 0)
      out << "FizzBuzz\n";
    else if (int(num % 3) == 0)
      out << "Fizz\n";
    else if (int(num % 5) == 0)
      out << "Buzz\n";
    else
      out << num.item() << '\n';  // num.numpy()
    counter = counter + 1;        // counter += 1: tensors are immutable, the name is rebound
  }
  return counter.item();
}

int main() {
  std::ostringstream out;
  const int count = fizzbuzz(15, out);
  std::cout << out.str();

  const char* expected = "1\n2\nFizz\n4\nBuzz\nFizz\n7\n8\nFizz\nBuzz\n11\nFizz\n13\n14\nFizzBuzz\n";
  const bool ok = out.str() == expected && count == 15;
  if (!ok) std::cerr << "fizzbuzz: unexpected output; expected:\n" << expected;
  return ok ? 0 : 1;
}
