// A lock whose hand-overs ThreadSanitizer cannot see, reported to it by hand: a peer built
// without it (Debian's absl, glibc's C11 mtx_t) or written in inline assembly (Concurrency
// Kit). Raw has raw_lock() and raw_unlock(), and a reader-writer lock raw_lock_shared() and
// raw_unlock_shared() as well; each acquisition is reported after it and each release before
// it, on the lock's address. Without ThreadSanitizer the reports compile to nothing.
// Internal to the lab.
#pragma once

#include "contend/internal/tsan.hpp"

namespace contend::lab {

template <class Raw>
struct tsan_reported : Raw {
    void lock() { acquired(&Raw::raw_lock); }
    void unlock() { releasing(&Raw::raw_unlock); }
    void lock_shared() { acquired(&Raw::raw_lock_shared); }
    void unlock_shared() { releasing(&Raw::raw_unlock_shared); }

private:
    template <class Step>
    void acquired(Step step) {
        (this->*step)();
        contend::internal::tsan_only_acquired(this);
    }
    template <class Step>
    void releasing(Step step) {
        contend::internal::tsan_only_releasing(this);
        (this->*step)();
    }
};

}  // namespace contend::lab
