#pragma once
/// \file Keras' pooling layers on NHWC input: max_pool2d and average_pool2d (pool_size 2, strides
/// the pool size unless given, padding "valid" or "same"), global_average_pooling2d and
/// global_max_pooling2d (over height and width). They have no variables.

#include <optional>
#include <string>

#include "../eager/pooling.hpp"
#include "conv2d.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

/// A pooling layer's options (Keras' defaults).
struct pool_options {
  std::optional<size2d> strides = {};  ///< the pool size when absent
  std::string padding = "valid";
  std::string name = "";
};

namespace impl {
/// Max or average pooling over windows.
template <class D, bool Max>
class window_pool : public layer_of<D> {
 public:
  window_pool(size2d pool_size, pool_options o, const char* keras_name)
      : layer_of<D>(o.name.empty() ? keras_name : o.name), size_(pool_size), strides_(o.strides.value_or(pool_size)),
        padding_(keras_padding(o.padding, keras_name)) {}
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    FG_CHECK(x.shape().rank() == 4, shape_error, "fg::nn::", this->type_name(), " '", this->name(),
             "': needs input of rank 4 (batch, height, width, channels), got shape ", x.shape());
    if constexpr (Max) return fusegrad::max_pool2d(x, size_, strides_, padding_);
    else return fusegrad::avg_pool2d(x, size_, strides_, padding_);
  }

 private:
  size2d size_, strides_;
  std::string padding_;
};
}  // namespace impl

class max_pool2d : public impl::window_pool<max_pool2d, true> {
 public:
  explicit max_pool2d(size2d pool_size = 2, pool_options o = {}) : window_pool(pool_size, o, "max_pooling2d") {}
  std::string type_name() const override { return "MaxPooling2D"; }
};
class average_pool2d : public impl::window_pool<average_pool2d, false> {
 public:
  explicit average_pool2d(size2d pool_size = 2, pool_options o = {})
      : window_pool(pool_size, o, "average_pooling2d") {}
  std::string type_name() const override { return "AveragePooling2D"; }
};

/// The mean over height and width: (batch, channels), or (batch, 1, 1, channels) with keepdims.
class global_average_pooling2d : public layer_of<global_average_pooling2d> {
 public:
  explicit global_average_pooling2d(bool keepdims = false, std::string name = "global_average_pooling2d")
      : layer_of(std::move(name)), keepdims_(keepdims) {}
  std::string type_name() const override { return "GlobalAveragePooling2D"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    return fusegrad::global_avg_pool2d(x, keepdims_);
  }

 private:
  bool keepdims_;
};
/// The maximum over height and width.
class global_max_pooling2d : public layer_of<global_max_pooling2d> {
 public:
  explicit global_max_pooling2d(bool keepdims = false, std::string name = "global_max_pooling2d")
      : layer_of(std::move(name)), keepdims_(keepdims) {}
  std::string type_name() const override { return "GlobalMaxPooling2D"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    return fusegrad::global_max_pool2d(x, keepdims_);
  }

 private:
  bool keepdims_;
};
}  // namespace fusegrad::nn
