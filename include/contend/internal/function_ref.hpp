// A non-owning reference to a callable: what parking_lot's callbacks are passed as, so a
// park never allocates (std::function may). The callable must outlive the call.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace contend::internal {

template <class Signature>
class function_ref;

template <class R, class... Args>
class function_ref<R(Args...)> {
public:
    // clang-format 14 mangles a requires-clause before a constructor: laid out by hand.
    // clang-format off
    template <class F>
        requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> &&
                 std::is_invocable_r_v<R, F&, Args...>)
    function_ref(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a lambda
        : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* object, Args... args) -> R {
              return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
          }) {}
    // clang-format on

    R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

private:
    void* object_;
    R (*call_)(void*, Args...);
};

}  // namespace contend::internal
