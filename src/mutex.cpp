// contend::mutex slow paths. The fast paths and the state table are in mutex.hpp.
//
// Protocol, in one place:
// - A waiter first spins a few rounds (cheap when the holder is about to release). Then it
//   registers in the waiter registry slot for the mutex's address (waiter_registry.cpp
//   explains why an unlocker's plain store cannot then slip past it unseen) and parks on
//   the address, validating under the bucket lock that the mutex is still held.
// - An unlocker that sees registered waiters takes the slow path: if a woken waiter is
//   already on its way (waking bit), it just releases; otherwise it unparks one thread and,
//   in the same bucket-locked callback, either hands the mutex over (fair: the bucket's
//   deadline passed, or unlock_fairly) or releases it and sets the waking bit.
// - A woken thread ("designee") owns the waking bit until it takes the mutex (clearing the
//   bit in the same CAS) or parks again (clearing it in validation, under the bucket lock,
//   so no unlock can decide "someone is coming" in between). Every path by which a
//   designee leaves, including a timeout, clears the bit; otherwise unlocks would wait
//   forever for a thread that is not coming.
#include "contend/mutex.hpp"

#include <sched.h>

#include "contend/internal/platform.hpp"
#include "contend/parking_lot.hpp"
#include "contend/synchronization_error.hpp"
#include "contention_counter.hpp"
#include "waiter_registry.hpp"

namespace contend {
namespace {

constexpr std::intptr_t handoff_token = 1;
std::atomic<std::uint32_t> spin_rounds{10};

// Round r of a contended lock's spin: 2^(r+1) pauses for the first four rounds (2..16,
// roughly 100 ns to 1 us), then a yield per round, as in Rust parking_lot's SpinWait.
void spin_round(std::uint32_t round) noexcept {
    if (round < 4) {
        for (std::uint32_t i = 0, n = 2u << round; i < n; ++i) internal::cpu_relax();
    } else {
        sched_yield();
    }
}

}  // namespace

namespace internal {
cache_padded<std::atomic<std::uint64_t>> contention_counts[contention_stripes];
}  // namespace internal

void mutex::set_spin_limit(std::uint32_t rounds) noexcept { spin_rounds.store(rounds, std::memory_order_relaxed); }
std::uint32_t mutex::spin_limit() noexcept { return spin_rounds.load(std::memory_order_relaxed); }

std::uint64_t lock_contention_count() noexcept {
    std::uint64_t sum = 0;
    for (auto& stripe : internal::contention_counts) sum += stripe->load(std::memory_order_relaxed);
    return sum;
}

bool mutex::lock_slow(internal::deadline until) {
    internal::count_contention();
    auto& slot = internal::waiter_slots[internal::waiter_slot_index(this)];

    const std::uint32_t limit = spin_rounds.load(std::memory_order_relaxed);
    for (std::uint32_t round = 0;; ++round) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        while (!(s & held_bit)) {
            if (state_.compare_exchange_weak(s, s | held_bit, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
        // Threads already parked here means the wait is long: join them rather than burn
        // a core (WTF's rule: spin only while nobody is parked).
        if (round >= limit || (slot.load(std::memory_order_relaxed) & internal::waiter_slot_count_mask) != 0) break;
        spin_round(round);
    }

    internal::waiter_registration registration(slot);
    bool designee = false;  // we were woken without a handoff and own the waking bit
    for (;;) {
        std::uint8_t s = state_.load(std::memory_order_relaxed);
        if (!(s & held_bit)) {
            const std::uint8_t desired = designee ? static_cast<std::uint8_t>((s | held_bit) & ~waking_bit)
                                                  : static_cast<std::uint8_t>(s | held_bit);
            if (state_.compare_exchange_weak(s, desired, std::memory_order_acquire, std::memory_order_relaxed))
                return true;
            continue;
        }
        if (until != internal::no_deadline && internal::clock::now() >= until) {
            if (designee) state_.fetch_and(static_cast<std::uint8_t>(~waking_bit), std::memory_order_relaxed);
            return false;
        }
        const bool was_designee = designee;
        const auto result = parking_lot::park(
            this,
            [&] {
                std::uint8_t v = state_.load(std::memory_order_relaxed);
                for (;;) {
                    if (!(v & held_bit)) return false;  // released meanwhile: retry instead
                    if (!was_designee || !(v & waking_bit)) return true;
                    if (state_.compare_exchange_weak(v, static_cast<std::uint8_t>(v & ~waking_bit),
                                                     std::memory_order_relaxed, std::memory_order_relaxed))
                        return true;
                }
            },
            until);
        switch (result.status) {
            case parking_lot::park_status::invalid:
                break;  // still the designee if we were one
            case parking_lot::park_status::timed_out:
                designee = false;  // validation cleared our waking bit
                break;  // the loop top tries once more, then gives up
            case parking_lot::park_status::unparked:
                if (result.token == handoff_token) return true;  // the unlocker left it held for us
                designee = true;
                break;
        }
    }
}

void mutex::unlock_slow(bool fair) {
    auto& slot = internal::waiter_slots[internal::waiter_slot_index(this)];
    std::uint8_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
        if (!(s & held_bit)) throw synchronization_error("contend::mutex::unlock: the mutex is not locked");
        if ((s & waking_bit) && !fair) {
            // A woken waiter is on its way and will either take the mutex or park again
            // only after seeing it held by someone whose own unlock will wake the next.
            if (state_.compare_exchange_weak(s, static_cast<std::uint8_t>(s & ~held_bit), std::memory_order_release,
                                             std::memory_order_relaxed))
                return;
            continue;
        }
        if (!internal::slot_has_waiters(slot)) {
            if (state_.compare_exchange_weak(s, static_cast<std::uint8_t>(s & ~held_bit), std::memory_order_seq_cst,
                                             std::memory_order_relaxed)) {
                // seq_cst RMW then seq_cst load: the fenced half of the registry handshake.
                if (internal::slot_has_waiters(slot)) wake_after_release();
                return;
            }
            continue;
        }
        break;
    }

    parking_lot::unpark_one(this, [&](parking_lot::unpark_result r) -> std::intptr_t {
        if (r.did_unpark_thread && (fair || r.time_to_be_fair)) return handoff_token;  // stays held
        std::uint8_t v = state_.load(std::memory_order_relaxed);
        for (;;) {
            std::uint8_t next = static_cast<std::uint8_t>(v & ~held_bit);
            if (r.did_unpark_thread) next |= waking_bit;
            if (state_.compare_exchange_weak(v, next, std::memory_order_release, std::memory_order_relaxed)) break;
        }
        return 0;
    });
}

void mutex::wake_after_release() noexcept {
    if (state_.load(std::memory_order_relaxed) & waking_bit) return;  // someone is already on the way
    parking_lot::unpark_one(this, [&](parking_lot::unpark_result r) -> std::intptr_t {
        if (r.did_unpark_thread) state_.fetch_or(waking_bit, std::memory_order_relaxed);
        return 0;
    });
}

}  // namespace contend
