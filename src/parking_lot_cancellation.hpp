// Parks that are POSIX cancellation points, for the LD_PRELOAD interposer's pthread_cond_wait
// (docs/interpose.md, "Cancellation"). Internal: nothing in the library itself parks this way.
//
// While a cancellable_parks scope is alive on a thread, that thread's parks on `address`
// sleep with platform/wait.hpp's wait_on_address_cancellable: a pthread_cancel pending or
// arriving during the sleep unwinds the thread out of parking_lot::park, which first takes
// the thread off the address's queue (or, if an unparker already took it off, waits for that
// wake-up, as a timeout does) and then lets the unwind go on. Parks on any other address (the
// mutex a condition variable retakes) are not cancellation points. The caller undoes the rest
// (retakes its lock) on the unwind.
#pragma once

namespace contend::parking_lot::detail {

class cancellable_parks {
public:
    explicit cancellable_parks(const void* address) noexcept;
    ~cancellable_parks();
    cancellable_parks(const cancellable_parks&) = delete;
    cancellable_parks& operator=(const cancellable_parks&) = delete;

private:
    const void* previous_;
};

}  // namespace contend::parking_lot::detail
