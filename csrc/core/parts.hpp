// pau native interval core: independent tasks on a few threads, the caller's included.
//
// A Tasks object runs task(0) .. task(n - 1), each exactly once, on the threads
// that pull them from one shared counter: workers started by start(), which
// return at once, and the caller's own thread in wait(), which helps until no
// task is left and then joins the workers. So a caller can start a sweep on one
// worker, do other work of its own (the lifecycle attribution), then join in:
// the cores are never idle while tasks are left, and the tasks that started
// first end first.
//
// An exception thrown by a task is kept; wait() rethrows the one of the lowest
// task index after every thread has stopped. Tasks must not share state.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace pau::core {

class Tasks {
  public:
    Tasks(std::function<void(size_t)> task, size_t n) : task_(std::move(task)), n_(n), errors_(n) {}
    Tasks(const Tasks&) = delete;
    Tasks& operator=(const Tasks&) = delete;

    // Never leaves a thread running behind: tasks not yet begun are dropped.
    ~Tasks() {
        next_.store(n_);
        join();
    }

    // Start up to `workers` threads (no more than there are tasks).
    void start(size_t workers) {
        for (size_t i = 0; i < workers && threads_.size() < n_; ++i) threads_.emplace_back([this] { work(); });
    }

    // Run what is left on this thread too, then join the workers; rethrows the
    // first task's exception, if any.
    void wait() {
        work();
        join();
        for (auto& e : errors_)
            if (e) std::rethrow_exception(e);
    }

  private:
    void work() {
        for (size_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) {
            try {
                task_(i);
            } catch (...) {
                errors_[i] = std::current_exception();
            }
        }
    }

    void join() {
        for (auto& t : threads_)
            if (t.joinable()) t.join();
        threads_.clear();
    }

    std::function<void(size_t)> task_;
    size_t n_;
    std::atomic<size_t> next_{0};
    std::vector<std::exception_ptr> errors_;
    std::vector<std::thread> threads_;
};

}  // namespace pau::core
