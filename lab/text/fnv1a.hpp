// FNV-1a, 64 bits: the lab's checksum of bytes that must match (a program's output against its
// plain run's) and its short hash of text (a program's arguments in contend run's params).
// Not for anything an adversary chooses to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace contend::lab {

inline constexpr std::uint64_t fnv1a_basis = 0xcbf29ce484222325ull;

// The hash of `bytes`, continued from `h` (the basis for a fresh one): fnv1a(b, fnv1a(a)) is
// the hash of a followed by b.
constexpr std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = fnv1a_basis) noexcept {
    for (const char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace contend::lab
