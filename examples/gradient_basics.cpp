// Computing gradients with a tape: watch a tensor, record, and ask for the gradient; a
// persistent tape answers more than once, and nested tapes give second derivatives.
#include <fusegrad/fusegrad.hpp>

#include <iostream>

int main() {
  bool ok = true;
  auto expect = [&](const char* what, float got, float want) {
    std::cout << what << ": " << got << '\n';
    if (got != want) {
      std::cerr << "gradient_basics: " << what << " is " << got << ", expected " << want << '\n';
      ok = false;
    }
  };

  // d(3x^2)/dx at x = 3 is 18.
  {
    const fg::tensor<float> x = 3.0f;
    fg::gradient_tape g;
    g.watch(x);  // constants are not watched unless asked; variables are
    const fg::tensor<float> y = 3 * x * x;
    expect("dy_dx", g.gradient(y, x).item(), 18.0f);
  }

  // A persistent tape answers several gradient() calls: 9x^2 = 81 and 18x = 54 at x = 3.
  {
    const fg::tensor<float> x = 3.0f;
    fg::gradient_tape g({.persistent = true});
    g.watch(x);
    const fg::tensor<float> y = 3 * x * x * x;
    const fg::tensor<float> dy_dx = g.gradient(y, x);  // recorded too: the tape is still live
    expect("persistent dy_dx", dy_dx.item(), 81.0f);
    expect("persistent d2y_dx2", g.gradient(dy_dx, x).item(), 54.0f);
  }

  // Two tapes, the outer one recording the inner one's backward pass.
  {
    const fg::tensor<float> x = 3.0f;
    fg::gradient_tape g;
    g.watch(x);
    fg::tensor<float> dy_dx;
    {
      fg::gradient_tape gg;
      gg.watch(x);
      const fg::tensor<float> y = 3 * x * x * x;
      dy_dx = gg.gradient(y, x);
    }
    expect("nested dy_dx", dy_dx.item(), 81.0f);
    expect("nested d2y_dx2", g.gradient(dy_dx, x).item(), 54.0f);
  }

  // Variables are watched automatically: d(w * w)/dw = 2w.
  {
    fg::variable<float> w(fg::tensor<float>{{1.0f}});  // tf.Variable([[1.0]])
    fg::gradient_tape tape;
    const fg::tensor<float> loss = w * w;
    const fg::tensor<float> grad = tape.gradient(loss, w);
    std::cout << grad << '\n';  // tensor([[2.]], shape=(1, 1), dtype=float32)
    ok = ok && grad.shape() == fg::shape{1, 1};
    expect("dloss_dw", grad.data()[0], 2.0f);
  }

  // A non-persistent tape answers once; asking again is an error.
  {
    const fg::tensor<float> x = 3.0f;
    fg::gradient_tape g;
    g.watch(x);
    const fg::tensor<float> y = x * x;
    (void)g.gradient(y, x);
    try {
      (void)g.gradient(y, x);
      ok = false;
    } catch (const fg::tape_error& e) {
      std::cout << "second gradient(): " << e.what() << '\n';
    }
  }
  return ok ? 0 : 1;
}
