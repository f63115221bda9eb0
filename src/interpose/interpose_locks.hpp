// The locks libcontend_interpose can run a kind-0 pthread mutex on: what CONTEND_INTERPOSE_LOCK
// and `contend run --lock` accept, one entry per lock. Everything that lists the locks or picks
// one is generated from this list: the lock_choice enumeration and the names it accepts
// (lock_choice.{hpp,cpp}), the message that lists them, the dispatch on the choice
// (visit_mutex_as in our_locks.hpp), the layout checks (glibc_layout.hpp), the lab's list
// (lab/run/preload_run.cpp) and the tests' (src/interpose/CMakeLists.txt reads this file).
//
//   X(name, alias, type, description)
//     name         the CONTEND_INTERPOSE_LOCK value, the lock_choice enumerator, and the name
//                  the lab's suites give the same type as a contender (lab/suites/locks.cpp),
//                  so that `contend run` rows and `contend bench` rows of one lock agree;
//     alias        an older name also accepted ("" for none); a process reports the name;
//     type         the lock kept in the mutex's own bytes (as_lock in our_locks.hpp): it needs
//                  lock(), try_lock() and unlock(), all-zero bytes as its free state, and the
//                  layout glibc_layout.hpp asserts for every entry (glibc_normal_mutex: glibc's
//                  own, in no bytes of ours);
//     description  one line, for `contend run --help`.
//
// Every spin lock of contend's family is here but tas_lock, a baseline its header says not to
// use (docs/interpose.md says why it stays out).
//
// One entry per line, the line starting with the X, then the name and the quoted alias: the
// tests' CMake reads the names and aliases from this file. No #include and no type is named
// outside the macro, so the lab reads the names without the interposer's headers.
#pragma once

// clang-format off
#define CONTEND_INTERPOSE_LOCKS(X) \
    X(contend_mutex, "", contend::mutex, "contend::mutex: spins briefly, then parks (the default)") \
    X(glibc, "", glibc_normal_mutex, "glibc's own mutex: every call passes through (the baseline)") \
    X(ttas_lock, "ttas", contend::ttas_lock, "test-and-test-and-set: spins, never parks") \
    X(ticket_lock, "ticket", contend::ticket_lock, "FIFO ticket lock: spins, never parks") \
    X(backoff_spin_lock, "", contend::backoff_spin_lock, "pause doubling to 1,024, then sched_yield; never parks") \
    X(sleeping_spin_lock, "", contend::sleeping_spin_lock, "8 probes, then a 1 ns nanosleep; never parks")
// clang-format on
