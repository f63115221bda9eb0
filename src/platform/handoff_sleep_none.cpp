// handoff_sleep on the portable and the model-checking backends: none. Callers sleep on their
// condition variable; a model explores no file descriptors.
#include "platform/handoff_sleep.hpp"

namespace contend::internal {

class handoff_sleep {};

handoff_sleep* this_thread_handoff_sleep() noexcept { return nullptr; }
bool sleep_until_handed_off(handoff_sleep*) noexcept { return false; }
void hand_off_to(handoff_sleep*) noexcept {}
int handoff_sleep_descriptor(const handoff_sleep*) noexcept { return -1; }
std::uint64_t handoffs_made() noexcept { return 0; }

}  // namespace contend::internal
