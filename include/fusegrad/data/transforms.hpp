#pragma once
/// \file The nodes of the transformations that choose or combine elements without computing:
/// repeat, take, skip, shard, concatenate, cache, enumerate and zip. Each passes element
/// references through (Note [row references]) except enumerate and zip, whose elements are new.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "pipeline.hpp"

namespace fusegrad::data::impl {

/// repeat(count): count passes over upstream (count = -1: without end). A pass that yields
/// nothing ends the repetition, so repeating an empty dataset ends at once.
template <class E>
class repeat_node final : public node<E> {
 public:
  repeat_node(node_ptr<E> up, std::int64_t count) : node<E>(cardinality_of(up->cardinality(), count)), up_(std::move(up)), count_(count) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_, count_); }

 private:
  static std::int64_t cardinality_of(std::int64_t c, std::int64_t count) {
    if (count == 0 || c == 0) return 0;
    if (c == infinite_cardinality || count < 0) return infinite_cardinality;
    if (c == unknown_cardinality) return unknown_cardinality;
    return c * count;
  }
  class pass final : public cursor<E> {
   public:
    pass(node_ptr<E> up, std::int64_t count) : up_(std::move(up)), count_(count) {}
    bool next(item<E>& out) override {
      for (;;) {
        if (!cur_) {
          if (count_ >= 0 && done_ >= count_) return false;
          cur_ = up_->open();
          yielded_ = false;
        }
        if (cur_->next(out)) {
          yielded_ = true;
          return true;
        }
        cur_.reset();
        ++done_;
        if (!yielded_) return false;
      }
    }

   private:
    node_ptr<E> up_;
    std::int64_t count_, done_ = 0;
    std::unique_ptr<cursor<E>> cur_;
    bool yielded_ = false;
  };
  node_ptr<E> up_;
  std::int64_t count_;
};

/// take(count): the first count elements (count = -1: all).
template <class E>
class take_node final : public node<E> {
 public:
  take_node(node_ptr<E> up, std::int64_t count) : node<E>(cardinality_of(up->cardinality(), count)), up_(std::move(up)), count_(count) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), count_); }

 private:
  static std::int64_t cardinality_of(std::int64_t c, std::int64_t count) {
    if (count < 0) return c;
    if (c == infinite_cardinality) return count;
    if (c == unknown_cardinality) return unknown_cardinality;
    return std::min(c, count);
  }
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::int64_t count) : up_(std::move(up)), left_(count) {}
    bool next(item<E>& out) override {
      if (left_ == 0) return false;
      if (!up_->next(out)) {
        left_ = 0;
        return false;
      }
      if (left_ > 0) --left_;
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::int64_t left_;  // -1: no limit
  };
  node_ptr<E> up_;
  std::int64_t count_;
};

/// skip(count): all but the first count elements (count = -1: none).
template <class E>
class skip_node final : public node<E> {
 public:
  skip_node(node_ptr<E> up, std::int64_t count) : node<E>(cardinality_of(up->cardinality(), count)), up_(std::move(up)), count_(count) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), count_); }

 private:
  static std::int64_t cardinality_of(std::int64_t c, std::int64_t count) {
    if (c == infinite_cardinality) return count < 0 ? 0 : c;
    if (count < 0) return 0;
    if (c == unknown_cardinality) return unknown_cardinality;
    return std::max<std::int64_t>(c - count, 0);
  }
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::int64_t count) : up_(std::move(up)), skip_(count) {}
    bool next(item<E>& out) override {
      if (skip_ < 0) return false;
      for (; skip_ > 0; --skip_)
        if (!up_->next(out)) return false;
      return up_->next(out);
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::int64_t skip_;  // still to skip; -1: everything
  };
  node_ptr<E> up_;
  std::int64_t count_;
};

/// shard(n, index): elements index, index + n, index + 2n, ...
template <class E>
class shard_node final : public node<E> {
 public:
  shard_node(node_ptr<E> up, std::int64_t n, std::int64_t index)
      : node<E>(cardinality_of(up->cardinality(), n, index)), up_(std::move(up)), n_(n), index_(index) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), n_, index_); }

 private:
  static std::int64_t cardinality_of(std::int64_t c, std::int64_t n, std::int64_t index) {
    if (c < 0) return c;
    return c / n + (index < c % n);
  }
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::int64_t n, std::int64_t index) : up_(std::move(up)), n_(n), skip_(index) {}
    bool next(item<E>& out) override {
      for (; skip_ > 0; --skip_)
        if (!up_->next(out)) return false;
      skip_ = n_ - 1;
      return up_->next(out);
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::int64_t n_, skip_;
  };
  node_ptr<E> up_;
  std::int64_t n_, index_;
};

/// concatenate(other): the elements of a, then those of b.
template <class E>
class concatenate_node final : public node<E> {
 public:
  concatenate_node(node_ptr<E> a, node_ptr<E> b)
      : node<E>(cardinality_of(a->cardinality(), b->cardinality())), a_(std::move(a)), b_(std::move(b)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(a_->open(), b_); }

 private:
  static std::int64_t cardinality_of(std::int64_t a, std::int64_t b) {
    if (a == infinite_cardinality || b == infinite_cardinality) return infinite_cardinality;
    if (a == unknown_cardinality || b == unknown_cardinality) return unknown_cardinality;
    return a + b;
  }
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> a, node_ptr<E> b) : cur_(std::move(a)), b_(std::move(b)) {}
    bool next(item<E>& out) override {
      if (cur_->next(out)) return true;
      if (!b_) return false;
      cur_ = b_->open();  // b's pass starts only once a is exhausted
      b_.reset();
      return cur_->next(out);
    }

   private:
    std::unique_ptr<cursor<E>> cur_;
    node_ptr<E> b_;
  };
  node_ptr<E> a_, b_;
};

/// cache(): the first complete pass stores its elements; later passes replay them. A pass
/// stopped early stores nothing; passes that run at once before the cache is complete each
/// read upstream, and the first to finish fills the cache.
template <class E>
class cache_node final : public node<E> {
 public:
  explicit cache_node(node_ptr<E> up) : node<E>(up->cardinality()), up_(std::move(up)) {}
  std::unique_ptr<cursor<E>> open() const override {
    std::shared_ptr<const std::vector<item<E>>> stored;
    {
      std::lock_guard<std::mutex> l(state_->m);
      stored = state_->stored;
    }
    if (stored) return std::make_unique<replay>(std::move(stored));
    return std::make_unique<record>(up_->open(), state_);
  }

 private:
  struct state {
    std::mutex m;
    std::shared_ptr<const std::vector<item<E>>> stored;
  };
  class replay final : public cursor<E> {
   public:
    explicit replay(std::shared_ptr<const std::vector<item<E>>> s) : s_(std::move(s)) {}
    bool next(item<E>& out) override {
      if (i_ == s_->size()) return false;
      out = (*s_)[i_++];
      return true;
    }

   private:
    std::shared_ptr<const std::vector<item<E>>> s_;
    std::size_t i_ = 0;
  };
  class record final : public cursor<E> {
   public:
    record(std::unique_ptr<cursor<E>> up, std::shared_ptr<state> s) : up_(std::move(up)), state_(std::move(s)) {}
    bool next(item<E>& out) override {
      if (!up_) return false;
      if (up_->next(out)) {
        got_.push_back(out);
        return true;
      }
      up_.reset();
      std::lock_guard<std::mutex> l(state_->m);
      if (!state_->stored) state_->stored = std::make_shared<const std::vector<item<E>>>(std::move(got_));
      return false;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::shared_ptr<state> state_;
    std::vector<item<E>> got_;
  };
  node_ptr<E> up_;
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

/// enumerate(start): (start + i, element i), the count an int64 scalar tensor.
template <class E>
class enumerate_node final : public node<std::tuple<tensor<std::int64_t>, E>> {
  using R = std::tuple<tensor<std::int64_t>, E>;

 public:
  enumerate_node(node_ptr<E> up, std::int64_t start) : node<R>(up->cardinality()), up_(std::move(up)), start_(start) {}
  std::unique_ptr<cursor<R>> open() const override { return std::make_unique<pass>(up_->open(), start_); }

 private:
  class pass final : public cursor<R> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::int64_t start) : up_(std::move(up)), i_(start) {}
    bool next(item<R>& out) override {
      if (!up_->next(x_)) return false;
      out.set(R(tensor<std::int64_t>(i_++), x_.take()));
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::int64_t i_;
    item<E> x_;
  };
  node_ptr<E> up_;
  std::int64_t start_;
};

/// zip(a, b, ...): tuples of the datasets' elements, until the first one ends.
template <class... E>
class zip_node final : public node<std::tuple<E...>> {
  using R = std::tuple<E...>;

 public:
  explicit zip_node(node_ptr<E>... up) : node<R>(cardinality_of({up->cardinality()...})), up_(std::move(up)...) {}
  std::unique_ptr<cursor<R>> open() const override {
    return std::apply([](const auto&... u) { return std::make_unique<pass>(u->open()...); }, up_);
  }

 private:
  static std::int64_t cardinality_of(std::initializer_list<std::int64_t> cs) {
    std::int64_t n = infinite_cardinality;
    for (std::int64_t c : cs) {
      if (c == unknown_cardinality) return unknown_cardinality;
      if (c != infinite_cardinality) n = n == infinite_cardinality ? c : std::min(n, c);
    }
    return n;
  }
  class pass final : public cursor<R> {
   public:
    explicit pass(std::unique_ptr<cursor<E>>... up) : up_(std::move(up)...) {}
    bool next(item<R>& out) override {
      if (done_) return false;
      // Left to right, stopping at the first that ends (as tf.data does).
      const bool all = std::apply([&](auto&... u) { return std::apply([&](auto&... x) { return (u->next(x) && ...); }, xs_); }, up_);
      if (!all) {
        done_ = true;
        return false;
      }
      out.set(std::apply([](auto&... x) { return R(x.take()...); }, xs_));
      return true;
    }

   private:
    std::tuple<std::unique_ptr<cursor<E>>...> up_;
    std::tuple<item<E>...> xs_;
    bool done_ = false;
  };
  std::tuple<node_ptr<E>...> up_;
};

}  // namespace fusegrad::data::impl
