// The cond suite: condition-variable handoffs. Workers take turns under one mutex and one
// condition variable: a worker may take a turn whenever it did not take the last one (with
// two workers, a strict ping-pong), increments the count, notifies one waiter and waits for
// its next turn. One operation is one turn, so ns per turn is the price of a wait/notify
// handoff: the notify, the waiter's wake-up and its retake of the mutex (the notifier still
// holds it when it notifies, as most programs do). Rows: cond/<pair>/workers:N.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "contend/condition_variable.hpp"
#include "contend/mutex.hpp"
#include "suites/suite_parts.hpp"

#if CONTEND_HAVE_ABSL
#include <absl/synchronization/mutex.h>

#include "contend/internal/tsan.hpp"
#endif

namespace contend::lab {
namespace {

// A mutex and condition variable pair behind one interface: lock, unlock, wait (with the
// mutex held), notify_one, notify_all.
template <class Mutex, class Cond>
struct std_style_pair {
    Mutex m;
    Cond cv;
    std::unique_lock<Mutex> lock() { return std::unique_lock<Mutex>(m); }
    void wait(std::unique_lock<Mutex>& lk) { cv.wait(lk); }
    void notify_one() { cv.notify_one(); }
    void notify_all() { cv.notify_all(); }
};

#if CONTEND_HAVE_ABSL
// absl::Mutex and absl::CondVar (Debian builds absl with deadlock detection on; it is turned
// off as for the lock suites' nodetect rows, since no other row pays for a graph).
struct absl_pair {
    struct guard {
        absl_pair* p;
        explicit guard(absl_pair* pair) : p(pair) {
            p->m.Lock();
            contend::internal::tsan_only_acquired(&p->m);
        }
        ~guard() {
            contend::internal::tsan_only_releasing(&p->m);
            p->m.Unlock();
        }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
    };
    absl::Mutex m;
    absl::CondVar cv;
    absl_pair() { absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore); }
    guard lock() { return guard(this); }
    void wait(guard&) {
        contend::internal::tsan_only_releasing(&m);
        cv.Wait(&m);
        contend::internal::tsan_only_acquired(&m);
    }
    void notify_one() { cv.Signal(); }
    void notify_all() { cv.SignalAll(); }
};
#endif

// The turns. The workers first wait for each other (progress has one entry per worker).
// `last_` is the worker that took the last turn; a worker waits while it is itself, unless it is the only worker left
// in run() (the others have done their turns, or not started yet) or the repetition is being stopped. One notify_one
// per turn is enough: every waiter but the last taker may go, so whoever is woken takes the next turn.
template <class Pair>
class handoff_workload final : public counting_workload {
public:
    void reset() override {
        turns_ = 0;
        last_ = -1;
        present_ = 0;
        arrived_ = 0;
        quit_ = false;
    }
    std::uint64_t run(int worker, std::uint64_t ops, const std::atomic<bool>& stop,
                      progress_counters& progress) override {
        auto& mine = progress[static_cast<std::size_t>(worker)].value;
        std::uint64_t done = 0;
        auto lk = pair_.lock();
        // Everyone arrives before the first turn: a worker that started alone would take its
        // turns with nobody to hand them to.
        ++present_;
        ++arrived_;
        pair_.notify_all();
        while (arrived_ < static_cast<int>(progress.size()) && !quit_) pair_.wait(lk);
        while (done < ops) {
            while (last_ == worker && present_ > 1 && !quit_) pair_.wait(lk);
            if (quit_) break;
            if (stop.load(std::memory_order_relaxed)) {
                quit_ = true;  // the others are woken below and leave too
                break;
            }
            ++turns_;
            last_ = worker;
            ++done;
            pair_.notify_one();
            if (done % poll_every == 0) mine.store(done, std::memory_order_relaxed);
        }
        --present_;
        pair_.notify_all();  // a worker left alone must not wait for this one
        mine.store(done, std::memory_order_relaxed);
        return done;
    }
    std::uint64_t observed_total() override { return turns_; }

private:
    Pair pair_;
    std::uint64_t turns_ = 0;  // all guarded by pair_'s mutex
    int last_ = -1;
    int present_ = 0;  // workers inside run()
    int arrived_ = 0;  // workers that have entered run() this repetition
    bool quit_ = false;
};

template <class Pair>
contender pair_row(const std::string& name, const std::string& description) {
    contender c;
    c.name = name;
    c.description = description;
    c.is_lock = true;  // the shares say whether every worker got its turns
    c.workload_type = demangled_type_name<handoff_workload<Pair>>();
    c.operation = "turn";
    c.make = [] { return std::make_unique<handoff_workload<Pair>>(); };
    return c;
}

}  // namespace

suite make_cond_suite() {
    suite s{"cond",
            "condition-variable handoffs: workers take turns under one mutex and condition variable, each turn a "
            "notify, a wake-up and a retake of the mutex the notifier held",
            {},
            {2, 4}};
    s.contenders.push_back(pair_row<std_style_pair<contend::mutex, contend::condition_variable>>(
        "contend_cv", "contend::condition_variable with contend::mutex"));
    s.contenders.push_back(pair_row<std_style_pair<std::mutex, std::condition_variable>>(
        "std_cv", "std::condition_variable with std::mutex (glibc's pthread cond and mutex)"));
    s.contenders.push_back(pair_row<std_style_pair<contend::mutex, std::condition_variable_any>>(
        "std_cv_any_contend_mutex", "std::condition_variable_any with contend::mutex"));
#if CONTEND_HAVE_ABSL
    s.contenders.push_back(pair_row<absl_pair>("absl_condvar", "absl::CondVar with absl::Mutex (no deadlock graph)"));
#endif
    return s;
}

}  // namespace contend::lab
