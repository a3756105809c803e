// pau native interval core: independent tasks on a few threads, the caller's included.
//
// A Tasks object runs task(0) .. task(n - 1), each exactly once, on the threads
// that pull them from one shared counter: helpers asked for by start(), which
// returns at once, and the caller's own thread in wait(), which helps until no
// task is left and then waits for the helpers still running one. So a caller can
// start a sweep on one helper, do other work of its own (the lifecycle
// attribution), then join in: the cores are never idle while tasks are left.
//
// Helpers are the threads of one process-wide pool (Workers), started on first
// use and kept, asleep when idle: waking one costs a few microseconds, starting a
// thread tens. A helper that wakes after wait() has finished does nothing.
//
// An exception thrown by a task is kept; wait() rethrows the one of the lowest
// task index after every thread has stopped. Tasks must not share state.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pau::core {

// The process's helper threads: each runs posted jobs, one at a time, in order.
class Workers {
  public:
    // The pool of this process, with one thread per core but one (at least one).
    // A forked child gets a pool of its own (its parent's threads do not exist
    // there; a fork at the very moment another thread is inside get() would leave
    // the child's lock held, as with any lock held across fork). Pools are never
    // destroyed, so no thread is joined at exit.
    //
    // The cores are the process's to decide (pau.engine._threads, from its affinity mask):
    // set_cores() before the first use; without it, the hardware's thread count.
    static Workers& get() {
        std::lock_guard<std::mutex> lock(guard());
        Workers*& pool = instance();
        static pid_t owner = 0;
        if (pool == nullptr || owner != getpid()) {
            const unsigned n = cores_setting() ? cores_setting() : std::thread::hardware_concurrency();
            const unsigned cores = std::max(2u, n);
            pool = new Workers(std::min(cores - 1, 7u));
            owner = getpid();
        }
        return *pool;
    }

    // The cores the pool is sized for; false (and no change) once the pool exists.
    static bool set_cores(unsigned cores) {
        std::lock_guard<std::mutex> lock(guard());
        if (instance() != nullptr) return false;
        cores_setting() = cores;
        return true;
    }

    size_t size() const { return threads_.size(); }

    void post(std::function<void()> job) {
        {
            std::lock_guard<std::mutex> lock(m_);
            queue_.push_back(std::move(job));
        }
        cv_.notify_one();
    }

  private:
    explicit Workers(size_t n) {
        for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); }).detach();
    }

    [[noreturn]] void loop() {
        for (;;) {
            std::function<void()> job;
            {
                std::unique_lock<std::mutex> lock(m_);
                cv_.wait(lock, [this] { return !queue_.empty(); });
                job = std::move(queue_.front());
                queue_.pop_front();
            }
            job();
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    static std::mutex& guard() {
        static std::mutex m;
        return m;
    }
    static Workers*& instance() {
        static Workers* pool = nullptr;
        return pool;
    }
    static unsigned& cores_setting() {
        static unsigned cores = 0;
        return cores;
    }

    std::vector<std::thread> threads_;
};

class Tasks {
  public:
    Tasks(std::function<void(size_t)> task, size_t n) : s_(std::make_shared<State>()) {
        s_->task = std::move(task);
        s_->n = n;
        s_->errors.resize(n);
    }
    Tasks(const Tasks&) = delete;
    Tasks& operator=(const Tasks&) = delete;

    // Never leaves a task running behind: tasks not yet begun are dropped.
    ~Tasks() {
        s_->next.store(s_->n);
        close();
    }

    // Ask up to `helpers` pool threads to help (no more than there are tasks).
    void start(size_t helpers) {
        Workers& pool = Workers::get();
        helpers = std::min({helpers, s_->n, pool.size()});
        for (size_t i = 0; i < helpers; ++i) {
            std::shared_ptr<State> s = s_;
            pool.post([s] {
                {
                    std::lock_guard<std::mutex> lock(s->m);
                    if (s->closed) return;  // woke after wait(): the tasks may be gone
                    ++s->running;
                }
                s->work();
                {
                    std::lock_guard<std::mutex> lock(s->m);
                    --s->running;
                }
                s->cv.notify_all();
            });
        }
    }

    // Run what is left on this thread too, then wait for the helpers; rethrows the
    // first task's exception, if any.
    void wait() {
        s_->work();
        close();
        for (auto& e : s_->errors)
            if (e) std::rethrow_exception(e);
    }

  private:
    struct State {
        std::function<void(size_t)> task;
        size_t n = 0;
        std::atomic<size_t> next{0};
        std::vector<std::exception_ptr> errors;
        std::mutex m;
        std::condition_variable cv;
        size_t running = 0;
        bool closed = false;

        void work() {
            for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
                try {
                    task(i);
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            }
        }
    };

    // No helper starts a task after this; waits for those that did.
    void close() {
        std::unique_lock<std::mutex> lock(s_->m);
        s_->closed = true;
        s_->cv.wait(lock, [this] { return s_->running == 0; });
    }

    std::shared_ptr<State> s_;
};

}  // namespace pau::core
