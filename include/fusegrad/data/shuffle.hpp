#pragma once
/// \file The node of dataset::shuffle (Note [shuffle buffer]) and its generator.
///
/// Note [shuffle buffer]: a pass fills a buffer with the first buffer_size elements, then each
/// output is a slot of the buffer picked uniformly at random, whose place the next element
/// takes; once the input is exhausted, the emptied slot is dropped. Output k is so picked
/// among inputs 0 .. k + buffer_size - 1: input i never comes out before position
/// i - buffer_size + 1, and a buffer as large as the data draws a uniform permutation (every
/// output is uniform over what is left). Only references move through the buffer (Note [row
/// references]), so shuffling the rows of a tensor copies no row. The picks come from SplitMix64
/// (Steele, Lea and Flood, OOPSLA 2014) with an unbiased bounded draw, so a seed gives the same
/// order on every platform. Pass p of a dataset draws from the seed mixed with p when
/// reshuffle_each_iteration is true (each epoch, each repeat, a new order), with 0 otherwise
/// (the same order every time); without a seed, the seed is drawn once when the dataset is made,
/// from fg::random's generator of the thread (fg::random::set_seed makes it repeat).

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "pipeline.hpp"

namespace fusegrad::data::impl {

/// SplitMix64: 64-bit outputs from a 64-bit state; the same sequence everywhere.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t state) noexcept : s_(state) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }
  /// A value in [0, n), every one equally likely (n > 0): draws below 2^64 mod n are rejected.
  std::uint64_t below(std::uint64_t n) noexcept {
    const std::uint64_t reject = (0 - n) % n;
    for (;;) {
      const std::uint64_t x = next();
      if (x >= reject) return x % n;
    }
  }

 private:
  std::uint64_t s_;
};

template <class E>
class shuffle_node final : public node<E> {
 public:
  shuffle_node(node_ptr<E> up, std::size_t buffer_size, std::uint64_t seed, bool reshuffle)
      : node<E>(up->cardinality()), up_(std::move(up)), buffer_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  std::unique_ptr<cursor<E>> open() const override {
    const std::uint64_t p = reshuffle_ ? passes_.fetch_add(1, std::memory_order_relaxed) : 0;
    // The first SplitMix64 output decorrelates neighbouring seeds and pass numbers.
    splitmix64 mix(seed_);
    return std::make_unique<pass>(up_->open(), buffer_, mix.next() ^ (p * 0xD1B54A32D192ED03u));
  }

 private:
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::size_t buffer_size, std::uint64_t state)
        : up_(std::move(up)), buffer_(buffer_size), rng_(state) {}
    bool next(item<E>& out) override {
      if (!filled_) {
        filled_ = true;
        for (item<E> x; !up_done_ && buf_.size() < buffer_;) {
          if (up_->next(x)) buf_.push_back(std::move(x));
          else up_done_ = true;
        }
      }
      if (buf_.empty()) return false;
      const std::size_t j = static_cast<std::size_t>(rng_.below(buf_.size()));
      out = std::move(buf_[j]);
      if (!up_done_ && up_->next(buf_[j])) return true;
      up_done_ = true;
      if (j + 1 != buf_.size()) buf_[j] = std::move(buf_.back());
      buf_.pop_back();
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    std::size_t buffer_;
    splitmix64 rng_;
    std::vector<item<E>> buf_;
    bool filled_ = false, up_done_ = false;
  };
  node_ptr<E> up_;
  std::size_t buffer_;
  std::uint64_t seed_;
  bool reshuffle_;
  mutable std::atomic<std::uint64_t> passes_{0};  // passes opened: the shuffle's epoch counter
};

}  // namespace fusegrad::data::impl
