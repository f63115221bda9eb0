// Registered waits: one service thread watches many events and hands each firing to the
// pool. Internal; thread_pool::register_wait is the public face.
//
// An event under watch carries a `watched` bit in its state word (contend/event.hpp): its
// set() then notifies this thread, so no thread blocks per registration and the event's
// fast paths stay as they were for everyone else.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "contend/internal/deadline.hpp"
#include "contend/internal/task.hpp"
#include "pool/service_thread.hpp"

namespace contend::internal {

struct wait_record;  // defined in wait_thread.cpp; shared by the thread and the user's handle
struct wait_state;  // defined in wait_thread.cpp; shared by the thread, its records and their tasks

class wait_thread {
public:
    using clock = internal::clock;  // the steady clock; the model's time in the model-checking build
    using dispatch_fn = std::function<void(task_node*)>;  // takes ownership; must not throw

    // The service thread (small stack, named "<name>-wait") starts with the first add().
    wait_thread(std::string name, dispatch_fn dispatch);
    // Ends every wait (the handles stay valid and report inactive) and stops the thread.
    ~wait_thread();
    // What the destructor does, ahead of it (idempotent): the pool calls it when its
    // destructor starts, while items that may still register waits drain. After it, add()
    // returns a record that is already ended (its handle reports inactive, nothing fires).
    void close();
    wait_thread(const wait_thread&) = delete;
    wait_thread& operator=(const wait_thread&) = delete;

    // `event` is a manual_reset_event (auto_reset false) or an auto_reset_event (true).
    // Each firing dispatches a task that calls callback(timed_out). timeout: clock::duration::max()
    // means none; otherwise it restarts after every firing. once: the wait ends after one firing.
    std::shared_ptr<wait_record> add(void* event, bool auto_reset, std::function<void(bool)> callback,
                                     clock::duration timeout, bool once);
    // Waits currently registered.
    std::size_t size() const;

private:
    // Policy (wait_thread.cpp says why): a registration's firings never overlap: it re-arms
    // when its callback returns, and the timeout restarts then. While disarmed, a set() of a
    // manual_reset_event is remembered and fires on re-arming; one of an auto_reset_event
    // stays in the event. A manual_reset_event that stays set therefore fires a repeating
    // wait back to back, one callback at a time, until it is reset or the wait ends.
    void run();

    std::shared_ptr<wait_state> state_;  // outlives this object while handles or tasks hold records
    const dispatch_fn dispatch_;
    service_thread thread_;  // started by the first add()
    bool closed_ = false;  // the destroying thread's own flag: close() ran
};

// For contend::wait_registration (defined in wait_thread.cpp).
void unregister_wait(wait_record& record) noexcept;
bool wait_is_active(const wait_record& record) noexcept;

}  // namespace contend::internal
