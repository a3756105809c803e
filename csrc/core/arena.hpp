// pau native core: large output buffers that start uninitialized, and a process-wide
// set of kept mappings they are carved from.
//
// buffer<T> is a std::vector whose elements start uninitialized (each output is written
// once, so zero-filling it first is a wasted pass over memory). On Linux a large one is
// a mapping of its own, taken from KeptMappings when one of about its size is kept, else
// mapped with all its pages at once; freed, it is kept for the next buffer rather than
// unmapped. KeptMappings is the one set of the process: a mutex guards it, fork handlers
// keep a child's copy unlocked, and release() (pau._core.release_kept_memory) gives the
// memory back to the system.
//
// This header knows nothing of Python; the bindings live in csrc/bindings/econ.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace pau::core {

#if defined(__linux__) && defined(MAP_POPULATE)
// Large mappings kept after their buffer is freed, for the next buffer of about their
// size. A process that calls requests() again (a batch job over many logs, a
// benchmark) then writes into pages it already holds instead of having hundreds of MB
// of fresh ones faulted in and zeroed by the kernel each call (measured: 7-10 % of
// requests() with busy, and on a virtual machine that hands freed memory back to its
// host, calls alternating between two speeds). At most limit() bytes stay mapped, the
// oldest unmapped first; the memory is the process's until it exits or release()
// (pau._core.release_kept_memory), as an allocator's arena would be.
class KeptMappings {
   public:
    // At most 1 GiB, and at most an eighth of the machine's memory.
    static size_t limit() {
        static const size_t bytes = [] {
            const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
            const size_t eighth = pages > 0 && page > 0 ? static_cast<size_t>(pages) / 8 * static_cast<size_t>(page)
                                                        : size_t{0};
            return std::min(size_t{1} << 30, eighth);
        }();
        return bytes;
    }

    // The one set of the process; never destroyed (buffers may be freed at exit). A
    // fork waits for the lock, so the child's copy is never left locked.
    static KeptMappings& get() {
        static KeptMappings* kept = [] {
            pthread_atfork([] { get().m_.lock(); }, [] { get().m_.unlock(); }, [] { get().m_.unlock(); });
            return new KeptMappings;
        }();
        return *kept;
    }

    // A kept mapping of at least `bytes` and at most a quarter more (its size in
    // `size`), or nullptr.
    void* take(size_t bytes, size_t& size) {
        std::lock_guard<std::mutex> lock(m_);
        size_t best = kept_.size();
        for (size_t i = 0; i < kept_.size(); ++i) {
            const size_t s = kept_[i].second;
            if (s >= bytes && s - bytes <= bytes / 4 && (best == kept_.size() || s < kept_[best].second)) best = i;
        }
        if (best == kept_.size()) return nullptr;
        void* p = kept_[best].first;
        size = kept_[best].second;
        kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
        bytes_ -= size;
        return p;
    }

    // Keep a mapping of `size` bytes, unmapping the oldest kept ones while the kept
    // bytes would exceed limit() (and this one if it alone does).
    void put(void* p, size_t size) noexcept {
        std::vector<std::pair<void*, size_t>> drop;
        {
            std::lock_guard<std::mutex> lock(m_);
            if (size > limit()) {
                drop.emplace_back(p, size);
            } else {
                while (bytes_ + size > limit()) {
                    drop.push_back(kept_.front());
                    bytes_ -= kept_.front().second;
                    kept_.erase(kept_.begin());
                }
                kept_.emplace_back(p, size);
                bytes_ += size;
            }
        }
        for (const auto& d : drop) munmap(d.first, d.second);
    }

    // The bytes kept now.
    size_t bytes() {
        std::lock_guard<std::mutex> lock(m_);
        return bytes_;
    }

    // Unmap every kept mapping (the memory goes back to the system).
    void release() noexcept {
        std::vector<std::pair<void*, size_t>> drop;
        {
            std::lock_guard<std::mutex> lock(m_);
            drop.swap(kept_);
            bytes_ = 0;
        }
        for (const auto& d : drop) munmap(d.first, d.second);
    }

   private:
    std::mutex m_;
    std::vector<std::pair<void*, size_t>> kept_;  // oldest first
    size_t bytes_ = 0;
};
#endif

// A vector whose elements start uninitialized: the large per-row outputs are written
// once each, and zero-filling them first costs a pass over memory (measured: ~10 % here).
template <typename T>
struct uninit_alloc : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = uninit_alloc<U>;
    };
    uninit_alloc() = default;
    template <typename U>
    uninit_alloc(const uninit_alloc<U>&) noexcept {}
#if defined(__linux__) && defined(MAP_POPULATE)
    // Large buffers (kPopulateBytes and up) are mappings of their own, a kept one
    // (KeptMappings) or a new one with all its pages at once: touching fresh pages
    // one by one costs a page fault each, and 10M requests write ~600 MB of new
    // outputs. A header page before the elements holds the mapping's size.
    static constexpr size_t kPopulateBytes = size_t{8} << 20;
    static constexpr size_t kHeader = 4096;
    static bool mapped(size_t n) {
        return n >= kPopulateBytes / sizeof(T) && n <= (std::numeric_limits<size_t>::max() - 2 * kHeader) / sizeof(T);
    }
    T* allocate(size_t n) {
        if (!mapped(n)) return std::allocator<T>::allocate(n);
        const size_t bytes = (n * sizeof(T) + 2 * kHeader - 1) / kHeader * kHeader;
        size_t size = bytes;
        void* p = KeptMappings::get().take(bytes, size);
        if (p == nullptr) {
            p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (p == MAP_FAILED) throw std::bad_alloc();
        }
        std::memcpy(p, &size, sizeof size);
        return reinterpret_cast<T*>(static_cast<char*>(p) + kHeader);
    }
    void deallocate(T* p, size_t n) noexcept {
        if (!mapped(n)) return std::allocator<T>::deallocate(p, n);
        char* base = reinterpret_cast<char*>(p) - kHeader;
        size_t size;
        std::memcpy(&size, base, sizeof size);
        KeptMappings::get().put(base, size);
    }
#endif
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... A>
    void construct(U* p, A&&... a) {
        ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};
template <typename T>
using buffer = std::vector<T, uninit_alloc<T>>;

}  // namespace pau::core
