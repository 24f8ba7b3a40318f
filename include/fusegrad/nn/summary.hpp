#pragma once
/// \file TensorFlow 2's model summary table (Keras' model.summary()), for nn::sequential and
/// nn::model<S>: each layer's name and type, output shape (the batch axis as None, the shape of
/// the layer's last call) and parameter count, then the totals, trainable and not, with their
/// sizes in memory.

#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "layer.hpp"

namespace fusegrad::nn::impl {

/// n with commas between groups of three digits ("1,290").
inline std::string grouped(std::size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}
/// A byte count as Keras prints it ("5.04 KB").
inline std::string memory(std::size_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}
/// A shape with its batch axis as None ("(None, 10)"); "?" before the first call.
inline std::string batch_free(const fg::shape& s) {
  if (s.rank() == 0) return "?";
  std::string out = "(None";
  for (std::size_t d = 1; d < s.rank(); ++d) out += ", " + std::to_string(s[d]);
  return out + (s.rank() == 1 ? ",)" : ")");
}

/// Writes the summary table of the model `model_name` whose layers are `layers` (each with the
/// name its row shows).
inline void summary_table(std::ostream& os, const std::string& model_name,
                          const std::vector<std::pair<std::string, const layer*>>& layers) {
  const int w0 = 31, w1 = 22, w2 = 13;
  auto rule = [&](const char* l, const char* m, const char* r, const char* fill) {
    std::string s = l;
    for (int i = 0; i < w0 + 2; ++i) s += fill;
    s += m;
    for (int i = 0; i < w1 + 2; ++i) s += fill;
    s += m;
    for (int i = 0; i < w2 + 2; ++i) s += fill;
    return s + r + "\n";
  };
  auto pad = [](const std::string& s, int w, bool right) {
    const std::string gap(s.size() < static_cast<std::size_t>(w) ? w - s.size() : 0, ' ');
    return right ? gap + s : s + gap;
  };
  auto row = [&](const char* bar, const std::string& a, const std::string& b, const std::string& c) {
    return std::string(bar) + " " + pad(a, w0, false) + " " + bar + " " + pad(b, w1, false) + " " + bar + " " +
           pad(c, w2, true) + " " + bar + "\n";
  };
  os << "Model: \"" << model_name << "\"\n";
  os << rule("┏", "┳", "┓", "━") << row("┃", "Layer (type)", "Output Shape", "Param #") << rule("┡", "╇", "┩", "━");
  std::size_t total = 0, trainable = 0, bytes_total = 0, bytes_trainable = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& [name, l] = layers[i];
    const std::string label = name + " (" + l->type_name() + ")";
    const std::size_t params = l->count_params();
    const std::string shape = batch_free(l->output_shape());
    if (label.size() <= static_cast<std::size_t>(w0)) {
      os << row("│", label, shape, grouped(params));
    } else {
      os << row("│", name, shape, grouped(params)) << row("│", "(" + l->type_name() + ")", "", "");
    }
    os << (i + 1 < layers.size() ? rule("├", "┼", "┤", "─") : rule("└", "┴", "┘", "─"));
    for (const named_variable& v : l->weights()) {
      const std::size_t n = v.shape().elements(), b = n * (std::holds_alternative<variable<float>>(v.value) ? 4 : 8);
      total += n;
      bytes_total += b;
      if (v.trainable()) {
        trainable += n;
        bytes_trainable += b;
      }
    }
  }
  if (layers.empty()) os << rule("└", "┴", "┘", "─");
  os << " Total params: " << grouped(total) << " (" << memory(bytes_total) << ")\n";
  os << " Trainable params: " << grouped(trainable) << " (" << memory(bytes_trainable) << ")\n";
  os << " Non-trainable params: " << grouped(total - trainable) << " (" << memory(bytes_total - bytes_trainable)
     << ")\n";
}
}  // namespace fusegrad::nn::impl
