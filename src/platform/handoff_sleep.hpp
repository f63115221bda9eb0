// A sleep that one known thread ends, with a wake-up that asks the kernel to run the sleeper
// where the waker runs: Linux's synchronous wake-up (WF_SYNC). A write to a pipe(2) whose
// reader sleeps in read() wakes it so; a futex wake does not. When the waker is the only
// runnable thread on its CPU, the scheduler then places the woken thread on that CPU rather
// than on the one it slept on (wake_affine_idle in kernel/sched/fair.c), and an idle CPU the
// sleeper left is still preferred. contend::pipe's two sides sleep here: beside a busy loop at
// normal priority on 2 CPUs, the kernel moves one side of a pair onto the loop's CPU now and
// then, and this wake-up brings it back at the side's next sleep (docs/design/polling.md, "A
// partner on another CPU").
//
// Which file implements it is chosen with the wait backend (CMakeLists.txt): on the futex
// backend a pipe of the calling thread's own (handoff_sleep_pipe.cpp); the portable and the
// model-checking backends have none (handoff_sleep_none.cpp), and callers sleep on their
// condition variable instead.
//
// Costs: two descriptors for each thread that has slept here (O_CLOEXEC, closed at the
// thread's exit), created at its first sleep, and never more than a sixteenth of the
// process's soft descriptor limit in all: a thread past that has none. A read() per sleep and a write() per wake-up,
// as a futex wait and wake are one system call each. A program that closes descriptors it did
// not open (a daemon's close-all loop) breaks a thread's: its next sleep fails, and the thread
// sleeps on the condition variable from then on. In the child of a fork() every pipe made
// before it is closed (their threads are not there), and the thread that forked makes a new
// one at its next sleep.
#pragma once

#include <cstdint>

namespace contend::internal {

class handoff_sleep;  // a thread's own; opaque

// The calling thread's, or nullptr where this build has none or the thread cannot have one
// (out of descriptors, the sixteenth of the limit taken by other threads' pipes when it first
// asked, or its pipe failed earlier: closed by the program).
handoff_sleep* this_thread_handoff_sleep() noexcept;

// Sleeps until hand_off_to(s), called once for each sleep: a hand-off that came first ends the
// sleep at once. Only s's own thread sleeps on s. False if the sleep failed (the program
// closed the descriptor): the thread has none from then on, and the caller, still registered
// where its waker looks, must take that back before it waits another way.
bool sleep_until_handed_off(handoff_sleep* s) noexcept;

// Ends s's sleep, or the next one. Any thread; never blocks.
void hand_off_to(handoff_sleep* s) noexcept;

// For tests: the descriptor s sleeps on (-1 where there is none), and how many hand-offs this
// process has made.
int handoff_sleep_descriptor(const handoff_sleep* s) noexcept;
std::uint64_t handoffs_made() noexcept;

}  // namespace contend::internal
