#pragma once
/// \file The nodes of dataset::map (on the iterating thread, or on worker threads keeping the
/// order: Note [parallel map]) and dataset::filter.
///
/// Note [parallel map]: with num_parallel_calls = k > 1, a pass keeps a window of up to k
/// elements in input order. next() tops the window up from the upstream cursor (on the calling
/// thread, so upstream cursors are never used by two threads), k workers take the window's
/// elements in order and run the function, and next() waits for the window's first element
/// and returns it: results come out in input order whatever order they finish in. A function's
/// exception is stored in its element's place and rethrown by next() when that element's turn
/// comes, with the element's number in the message (impl::with_context); the pass goes on with
/// the next element if next() is called again. An exception of the upstream cursor takes the
/// place of the element it was reading and ends the pass. Destroying the pass stops the workers
/// after the calls they are running and joins them; elements not yet taken are never computed.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pipeline.hpp"

namespace fusegrad::data::impl {

inline std::string element_context(const char* what, std::size_t i) {
  return std::string(what) + std::to_string(i) + ": ";
}

template <class E, class R, class F>
class map_node final : public node<R> {
 public:
  map_node(node_ptr<E> up, F f, std::size_t threads)
      : node<R>(up->cardinality()), up_(std::move(up)), f_(std::move(f)), threads_(threads) {}
  std::unique_ptr<cursor<R>> open() const override {
    if constexpr (callable_on<const F, E>)
      if (threads_ > 1) return std::make_unique<parallel_pass>(up_->open(), f_, threads_);
    return std::make_unique<serial_pass>(up_->open(), f_);
  }

 private:
  static constexpr const char* failed = "fg::data::map: the function failed on element ";

  /// One thread: the function runs in next(), on a copy of it made for the pass.
  class serial_pass final : public cursor<R> {
   public:
    serial_pass(std::unique_ptr<cursor<E>> up, const F& f) : up_(std::move(up)), f_(f) {}
    bool next(item<R>& out) override {
      item<E> x;
      if (!up_->next(x)) return false;
      const std::size_t i = i_++;
      try {
        out.set(impl::normalize(impl::call_on(f_, x.take())));
      } catch (...) {
        std::rethrow_exception(with_context(std::current_exception(), element_context(failed, i)));
      }
      return true;
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    F f_;
    std::size_t i_ = 0;
  };

  /// k threads, results in input order (Note [parallel map]).
  class parallel_pass final : public cursor<R> {
    struct job {
      item<E> input;
      std::size_t index = 0;
      std::optional<R> result;
      std::exception_ptr error;
      bool done = false;
    };

   public:
    parallel_pass(std::unique_ptr<cursor<E>> up, const F& f, std::size_t threads)
        : up_(std::move(up)), f_(f), threads_(threads) {}
    ~parallel_pass() override {
      {
        std::lock_guard<std::mutex> l(m_);
        stop_ = true;
      }
      work_.notify_all();
      for (std::thread& t : workers_) t.join();
    }
    bool next(item<R>& out) override {
      while (workers_.size() < threads_) workers_.emplace_back([this] { work(); });
      while (!up_done_ && window_.size() < threads_) {
        auto j = std::make_unique<job>();
        j->index = index_++;
        bool got = false;
        try {
          got = up_->next(j->input);
        } catch (...) {
          j->error = std::current_exception();
          j->done = true;
        }
        if (!got) up_done_ = true;
        if (!got && !j->error) break;
        job* p = j.get();
        {
          std::lock_guard<std::mutex> l(m_);
          window_.push_back(std::move(j));
          if (!p->done) todo_.push_back(p);
        }
        work_.notify_one();
      }
      if (window_.empty()) return false;
      std::unique_ptr<job> j;
      {
        std::unique_lock<std::mutex> l(m_);
        finished_.wait(l, [&] { return window_.front()->done; });
        j = std::move(window_.front());
        window_.pop_front();
      }
      if (j->error) std::rethrow_exception(j->error);
      out.set(std::move(*j->result));
      return true;
    }

   private:
    void work() {
      for (;;) {
        job* j = nullptr;
        {
          std::unique_lock<std::mutex> l(m_);
          work_.wait(l, [&] { return stop_ || !todo_.empty(); });
          if (stop_) return;
          j = todo_.front();
          todo_.pop_front();
        }
        // The job is this worker's alone until `done` is set under the lock.
        std::optional<R> r;
        std::exception_ptr e;
        try {
          r.emplace(impl::normalize(impl::call_on(f_, j->input.take())));
        } catch (...) {
          e = with_context(std::current_exception(), element_context(failed, j->index));
        }
        {
          std::lock_guard<std::mutex> l(m_);
          j->result = std::move(r);
          j->error = e;
          j->done = true;
        }
        finished_.notify_one();
      }
    }

    std::unique_ptr<cursor<E>> up_;
    const F f_;  // called by every worker at once
    std::size_t threads_;
    std::size_t index_ = 0;
    bool up_done_ = false;
    std::mutex m_;
    std::condition_variable work_, finished_;
    bool stop_ = false;
    std::deque<std::unique_ptr<job>> window_;  // the elements in flight, in input order
    std::deque<job*> todo_;                    // those no worker has taken yet
    std::vector<std::thread> workers_;
  };

  node_ptr<E> up_;
  F f_;
  std::size_t threads_;
};

template <class T>
inline constexpr bool always_false = false;

/// A predicate's result as a bool: a bool, or a scalar bool tensor (or a lazy comparison).
template <class B>
bool truth(const B& b) {
  if constexpr (std::is_same_v<B, bool>) {
    return b;
  } else if constexpr (expression<B> || is_tensor<B>::value) {
    static_assert(std::is_same_v<typename B::value_type, bool>,
                  "fg::data::filter: the predicate must return bool or a bool tensor (a comparison such as x > 0)");
    const tensor<bool> t = b;
    FG_CHECK(t.rank() == 0, shape_error, "fg::data::filter: the predicate must return a scalar, got a tensor of shape ",
             t.shape());
    return t.item();
  } else {
    static_assert(always_false<B>, "fg::data::filter: the predicate must return bool or a scalar bool tensor");
    return false;
  }
}

template <class E, class P>
class filter_node final : public node<E> {
 public:
  filter_node(node_ptr<E> up, P pred) : node<E>(unknown_cardinality), up_(std::move(up)), pred_(std::move(pred)) {}
  std::unique_ptr<cursor<E>> open() const override { return std::make_unique<pass>(up_->open(), pred_); }

 private:
  class pass final : public cursor<E> {
   public:
    pass(std::unique_ptr<cursor<E>> up, const P& pred) : up_(std::move(up)), pred_(pred) {}
    bool next(item<E>& out) override {
      for (;;) {
        if (!up_->next(out)) return false;
        bool keep = false;
        try {
          keep = out.value ? impl::truth(impl::call_on(pred_, *out.value)) : impl::truth(impl::call_on(pred_, out.get()));
        } catch (...) {
          std::rethrow_exception(with_context(std::current_exception(),
                                              element_context("fg::data::filter: the predicate failed on element ", i_++)));
        }
        ++i_;
        if (keep) return true;
      }
    }

   private:
    std::unique_ptr<cursor<E>> up_;
    P pred_;
    std::size_t i_ = 0;
  };
  node_ptr<E> up_;
  P pred_;
};

}  // namespace fusegrad::data::impl
