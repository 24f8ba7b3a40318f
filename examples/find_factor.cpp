// Dynamic control flow: an ordinary C++ loop and `if` on the value of a tensor find the
// factors of 14 (the notebook's find_factor).
#include <fusegrad/fusegrad.hpp>

#include <iostream>
#include <sstream>
#include <vector>

std::vector<int> find_factor(int n) {
  std::vector<int> result;
  const fg::tensor<int> num = n;          // tf.convert_to_tensor(num)
  for (int i = 1; i <= num.item(); ++i)   // for i in range(1, num.numpy() + 1)
    if (num % i == 0) result.push_back(i);  // a one-element bool tensor decides the branch
  return result;
}

int main() {
  const std::vector<int> result = find_factor(14);

  std::ostringstream out;
  out << "all factors: [";
  for (std::size_t i = 0; i < result.size(); ++i) out << (i ? ", " : "") << result[i];
  out << "]\n";
  std::cout << out.str();

  const bool ok = result == std::vector<int>{1, 2, 7, 14} && out.str() == "all factors: [1, 2, 7, 14]\n";
  if (!ok) std::cerr << "find_factor: expected all factors: [1, 2, 7, 14]\n";
  return ok ? 0 : 1;
}
