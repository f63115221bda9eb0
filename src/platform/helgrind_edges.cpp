// helgrind's side of contend/internal/tsan.hpp: the client requests, out of line, and the flag
// that says whether to make them. Built only with valgrind's <valgrind/helgrind.h>.
#include "contend/internal/tsan.hpp"

#if defined(CONTEND_HELGRIND_EDGES)
#include <valgrind/helgrind.h>

namespace contend::internal {

bool helgrind_running = false;

namespace {
// Before every dynamic initializer of default priority, so that the statics they make are
// already left unchecked. Any other valgrind tool, or none, answers -2, compared as an int:
// outside valgrind the default comes back through a 32-bit move on x86-64, so as a long it
// reads 4294967294, and every process was taken for helgrind's (the slow paths made their
// client requests everywhere; tests/platform_test.cpp holds the test).
[[gnu::constructor(101)]] void detect_helgrind() noexcept {
    char probe = 0;
    helgrind_running = static_cast<int>(VALGRIND_HG_GET_ABITS(&probe, nullptr, 1)) != -2;
}
}  // namespace

void helgrind_happens_after(const volatile void* address) noexcept { ANNOTATE_HAPPENS_AFTER(address); }
void helgrind_happens_before(const volatile void* address) noexcept { ANNOTATE_HAPPENS_BEFORE(address); }
void helgrind_disable_checking(const volatile void* address, std::size_t size) noexcept {
    VALGRIND_HG_DISABLE_CHECKING(address, size);
}

}  // namespace contend::internal
#endif
