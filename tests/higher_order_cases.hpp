#pragma once
// Higher-order cases run by both the host tests (higher_order_test.cpp) and the device tests
// (device_test_bodies.hpp), on the default device.
#include <fusegrad/fusegrad.hpp>

#include <array>

namespace fg_test {
/// With a = [[1], [2]] (shape (2, 1)) and b = [3, 4, 5]: f = sum(a * a * b) gives
/// df/db_j = A = sum_i a_i^2, summed over the broadcast axis into shape (3) and recorded with an
/// upstream of shape (1, 3). z = sum((df/db)^2) = 3 A^2 gives dz/da_i = 12 A a_i; while the
/// outermost tape records, that step reshapes the upstream 2 df/db, of shape (3) and depending
/// on a, to (1, 3) (the replay's reshape). w = sum(dz/da) = 12 A S (S = sum_i a_i) gives
/// dw/da_k = 12 (2 a_k S + A). Returns df/db, dz/da and dw/da.
inline std::array<fg::tensor<double>, 3> third_order_through_broadcast() {
  const fg::tensor<double> a = fg::tensor<double>{{1.0}, {2.0}}.to(fg::default_device());
  const fg::tensor<double> b = fg::tensor<double>{3.0, 4.0, 5.0}.to(fg::default_device());
  fg::gradient_tape t3;
  t3.watch(a);
  fg::tensor<double> gb, ga;
  {
    fg::gradient_tape t2;
    t2.watch(a);
    {
      fg::gradient_tape t1;
      t1.watch(b);
      gb = t1.gradient(fg::sum(a * a * b), b);
    }
    ga = t2.gradient(fg::sum(gb * gb), a);
  }
  const fg::tensor<double> gaa = t3.gradient(fg::sum(ga), a);
  return {gb, ga, gaa};
}
}  // namespace fg_test
