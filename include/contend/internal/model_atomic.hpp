// The model-checking build's atomics (compiled only with CONTEND_MODEL_CHECK; see
// docs/design/model-checking.md). internal::atomic<T> is this type there: a std::atomic<T>
// with a scheduling point before every operation, so that the scheduler of src/model/ chooses
// which thread performs the next one.
//
// Contract:
// - Same layout as std::atomic<T> (it holds one), so the library's static_asserts on sizes
//   hold and a one-byte mutex stays one byte.
// - Outside a model execution (static initialization, the test's own thread before it starts
//   exploring) an operation is the plain std::atomic operation, with no scheduling point.
// - Inside one, the operation runs only while its thread holds the scheduler's baton, so every
//   operation is one indivisible step and the interleavings are sequentially consistent: the
//   memory orders passed are kept (and still honoured by the hardware) but not modelled.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace contend::model {

// What a scheduling point is about to do; the failure report prints it per step.
enum class step_kind : std::uint8_t {
    load,
    store,
    exchange,
    compare_exchange,
    fetch_add,
    fetch_sub,
    fetch_and,
    fetch_or,
    fetch_xor,
    fence,
    wait,
    wake_one,
    wake_all,
    yield,
    spawn,
    join,
    exit,
};

namespace hooks {
// True while the calling thread is a thread of a running model execution.
bool in_execution() noexcept;
// A scheduling point: returns when the scheduler has chosen the calling thread again.
void point(step_kind kind, const void* address) noexcept;
// Records what the step just done read and wrote (for the failure report).
void record(std::uint64_t before, std::uint64_t after) noexcept;
// A hint from a spin loop (cpu_relax): the strategies treat the next point as a yield.
void spin_hint() noexcept;
}  // namespace hooks

template <class T>
std::uint64_t bits_of(const T& v) noexcept {
    std::uint64_t b = 0;
    if constexpr (sizeof(T) <= sizeof b) std::memcpy(&b, &v, sizeof v);
    return b;
}

template <class T>
class atomic {
public:
    static constexpr bool is_always_lock_free = std::atomic<T>::is_always_lock_free;

    constexpr atomic() noexcept(std::is_nothrow_default_constructible_v<T>) = default;
    constexpr atomic(T v) noexcept : v_(v) {}
    atomic(const atomic&) = delete;
    atomic& operator=(const atomic&) = delete;

    T load(std::memory_order order = std::memory_order_seq_cst) const noexcept {
        point(step_kind::load);
        const T v = v_.load(order);
        note(v, v);
        return v;
    }
    operator T() const noexcept { return load(); }

    void store(T v, std::memory_order order = std::memory_order_seq_cst) noexcept {
        point(step_kind::store);
        const T before = v_.load(std::memory_order_relaxed);
        v_.store(v, order);
        note(before, v);
    }
    T operator=(T v) noexcept {
        store(v);
        return v;
    }

    T exchange(T v, std::memory_order order = std::memory_order_seq_cst) noexcept {
        point(step_kind::exchange);
        const T before = v_.exchange(v, order);
        note(before, v);
        return before;
    }

    bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                                 std::memory_order failure) noexcept {
        point(step_kind::compare_exchange);
        const T seen = v_.load(std::memory_order_relaxed);
        const bool ok = v_.compare_exchange_strong(expected, desired, success, failure);
        note(seen, ok ? desired : seen);
        return ok;
    }
    bool compare_exchange_strong(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
        return compare_exchange_strong(expected, desired, order, failure_order(order));
    }
    // A weak CAS fails only when the value differs: the model has no spurious failures
    // (a retry loop around one is then explored as the value changing, which it must handle).
    bool compare_exchange_weak(T& expected, T desired, std::memory_order success, std::memory_order failure) noexcept {
        return compare_exchange_strong(expected, desired, success, failure);
    }
    bool compare_exchange_weak(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst) noexcept {
        return compare_exchange_strong(expected, desired, order, failure_order(order));
    }

    template <class D>
    T fetch_add(D d, std::memory_order order = std::memory_order_seq_cst) noexcept requires
        requires(std::atomic<T>& a) {
        a.fetch_add(d);
    }
    {
        return rmw(step_kind::fetch_add, [&] { return v_.fetch_add(d, order); });
    }
    template <class D>
    T fetch_sub(D d, std::memory_order order = std::memory_order_seq_cst) noexcept requires
        requires(std::atomic<T>& a) {
        a.fetch_sub(d);
    }
    {
        return rmw(step_kind::fetch_sub, [&] { return v_.fetch_sub(d, order); });
    }
    T fetch_and(T d, std::memory_order order = std::memory_order_seq_cst) noexcept requires std::is_integral_v<T> {
        return rmw(step_kind::fetch_and, [&] { return v_.fetch_and(d, order); });
    }
    T fetch_or(T d, std::memory_order order = std::memory_order_seq_cst) noexcept requires std::is_integral_v<T> {
        return rmw(step_kind::fetch_or, [&] { return v_.fetch_or(d, order); });
    }
    T fetch_xor(T d, std::memory_order order = std::memory_order_seq_cst) noexcept requires std::is_integral_v<T> {
        return rmw(step_kind::fetch_xor, [&] { return v_.fetch_xor(d, order); });
    }
    T operator++() noexcept requires std::is_integral_v<T> { return fetch_add(1) + 1; }
    T operator--() noexcept requires std::is_integral_v<T> { return fetch_sub(1) - 1; }
    T operator++(int) noexcept requires std::is_integral_v<T> { return fetch_add(1); }
    T operator--(int) noexcept requires std::is_integral_v<T> { return fetch_sub(1); }

    bool is_lock_free() const noexcept { return v_.is_lock_free(); }

    // The value without a scheduling point, for the model's own wait backend, which reads the
    // word inside the step that decides whether to block (as the kernel does under its lock).
    T unscheduled_load() const noexcept { return v_.load(std::memory_order_seq_cst); }

private:
    static constexpr std::memory_order failure_order(std::memory_order o) noexcept {
        if (o == std::memory_order_acq_rel) return std::memory_order_acquire;
        if (o == std::memory_order_release) return std::memory_order_relaxed;
        return o;
    }
    void point(step_kind kind) const noexcept {
        if (hooks::in_execution()) hooks::point(kind, &v_);
    }
    static void note(const T& before, const T& after) noexcept {
        if (hooks::in_execution()) hooks::record(bits_of(before), bits_of(after));
    }
    template <class F>
    T rmw(step_kind kind, F f) noexcept {
        point(kind);
        const T before = f();
        note(before, v_.load(std::memory_order_relaxed));
        return before;
    }

    std::atomic<T> v_{};
};

// A fence is a scheduling point and nothing more: every step is already sequentially
// consistent in the model (the real fence is still executed).
inline void fence(std::memory_order order) noexcept {
    if (hooks::in_execution()) hooks::point(step_kind::fence, nullptr);
    std::atomic_thread_fence(order);
}

}  // namespace contend::model
