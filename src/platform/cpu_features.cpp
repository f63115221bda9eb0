// CPU features the inline fast paths test at run time (include/contend/internal/prefetch.hpp).
#include "contend/internal/prefetch.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace contend::internal {
namespace {

bool detect_prefetchw() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    // CPUID 0x80000001, ECX bit 8: PRFCHW (AMD's 3DNowPrefetch).
    if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ecx & (1u << 8)) != 0;
#else
    return false;
#endif
}

}  // namespace

extern const bool prefetchw_supported = detect_prefetchw();

}  // namespace contend::internal
