// Prefetch for write: ask for a lock's cache line in the exclusive state before reading it.
// Internal.
//
// A lock() that loads its word before the CAS (to see a designee's bit, or an inflated
// word, without a failing locked instruction) fetches the line in the shared state when
// another core wrote it last, and the CAS then waits a second time for ownership. With one
// hot lock the line is rarely elsewhere; with thousands of locks picked at random (a
// striped table, one lock per connection) almost every acquisition finds it on another
// core, and the CAS pays a second trip. PREFETCHW asks for ownership up front, so the load
// and the CAS share one trip (measured: docs/design/mutex.md).
//
// Cost: one instruction and a load of a read-only flag. x86-64 only, and only where CPUID
// reports the instruction (the PRFCHW bit): processors without it are not documented to
// treat the opcode as a no-op, so the check is made once at load time and read here.
// Elsewhere it is a no-op.
#pragma once

namespace contend::internal {

// Set once during the library's static initialization; false before then (no prefetch).
extern const bool prefetchw_supported;

inline void prefetch_for_write([[maybe_unused]] const void* address) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (prefetchw_supported) asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(address)));
#endif
}

}  // namespace contend::internal
