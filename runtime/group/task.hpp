// A collective algorithm is a C++20 coroutine: it starts messages, `co_await`s them, reduces, and
// repeats, reading like the textbook algorithm while the communicator's progress loop drives it without
// ever blocking. A Task may await another Task (allreduce_ring awaits the ring reduce-scatter and the
// ring allgather); an exception inside one ends the whole chain and reaches whoever drives it.
#pragma once

#include <coroutine>
#include <exception>
#include <utility>

namespace gw::comm {

class Task {
 public:
  struct promise_type {
    std::coroutine_handle<> continuation;
    std::exception_ptr error;

    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        auto next = h.promise().continuation;
        return next ? next : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  std::coroutine_handle<> handle() const { return handle_; }
  bool done() const { return !handle_ || handle_.done(); }
  // Rethrows what ended the coroutine with an exception.
  void rethrow_error() const {
    if (handle_ && handle_.promise().error) std::rethrow_exception(handle_.promise().error);
  }

  // Awaiting a Task runs it to completion, then resumes the awaiting coroutine.
  bool await_ready() const noexcept { return done(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    handle_.promise().continuation = awaiting;
    return handle_;
  }
  void await_resume() const { rethrow_error(); }

 private:
  void reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  std::coroutine_handle<promise_type> handle_;
};

}  // namespace gw::comm
