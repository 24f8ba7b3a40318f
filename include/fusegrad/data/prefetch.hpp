#pragma once
/// \file The node of dataset::prefetch: a background thread per pass that runs the upstream
/// pipeline ahead of the loop (Note [prefetch thread]).
///
/// Note [prefetch thread]: a pass starts its thread on the first next(). The thread pulls
/// elements from the upstream cursor, which only it uses from then on, into a queue of at most
/// buffer_size elements, waiting while the queue is full; next() waits while it is empty. An
/// exception of the upstream pipeline (a map function, a generator) is queued after the
/// elements that came before it and rethrown by next() in its turn; the pass then ends.
/// Destroying the pass mid-iteration sets a stop flag that the thread sees before each pull
/// and while waiting on a full queue, then joins it: the wait is at most one upstream element.
/// The element references (Note [row references]) cross threads through the queue's mutex.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "pipeline.hpp"

namespace fusegrad::data::impl {

template <class E>
class prefetch_node final : public node<E> {
 public:
  prefetch_node(node_ptr<E> up, std::size_t buffer_size)
      : node<E>(up->cardinality()), up_(std::move(up)), buffer_(buffer_size) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), buffer_); }

 private:
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, std::size_t capacity) : up_(std::move(up)), capacity_(capacity) {}
    ~pass() override {
      {
        std::lock_guard<std::mutex> l(m_);
        stop_ = true;
      }
      not_full_.notify_all();
      if (thread_.joinable()) thread_.join();
    }
    bool next(item<E>& out) override {
      if (finished_) return false;
      if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
      std::unique_lock<std::mutex> l(m_);
      not_empty_.wait(l, [&] { return !queue_.empty() || done_; });
      if (!queue_.empty()) {
        out = std::move(queue_.front());
        queue_.pop_front();
        l.unlock();
        not_full_.notify_one();
        return true;
      }
      l.unlock();
      // The producer has ended: join it here, so that a later next() starts nothing.
      thread_.join();
      finished_ = true;
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      return false;
    }

   private:
    void produce() {
      std::exception_ptr error;
      try {
        for (item<E> x;;) {
          {
            std::lock_guard<std::mutex> l(m_);
            if (stop_) break;
          }
          if (!up_->next(x)) break;
          std::unique_lock<std::mutex> l(m_);
          not_full_.wait(l, [&] { return stop_ || queue_.size() < capacity_; });
          if (stop_) break;
          queue_.push_back(std::move(x));
          l.unlock();
          not_empty_.notify_one();
        }
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> l(m_);
        error_ = error;
        done_ = true;
      }
      not_empty_.notify_one();
    }

    std::unique_ptr<cursor<E>> up_;
    std::size_t capacity_;
    std::mutex m_;
    std::condition_variable not_empty_, not_full_;
    std::deque<item<E>> queue_;
    std::exception_ptr error_;
    bool stop_ = false, done_ = false;
    bool finished_ = false;  // the thread has ended and been joined (the consumer's own flag)
    std::thread thread_;
  };
  node_ptr<E> up_;
  std::size_t buffer_;
};

}  // namespace fusegrad::data::impl
