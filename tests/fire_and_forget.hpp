// A coroutine nobody awaits: it starts at once and frees itself when it ends. The tests' and
// the models' (tests/model), which share nothing else.
#pragma once

#include <coroutine>
#include <cstdlib>

namespace contend_test {

struct fire_and_forget {
    struct promise_type {
        fire_and_forget get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::abort(); }
    };
};

}  // namespace contend_test
