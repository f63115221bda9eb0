#include "sync_table.hpp"

#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace contend::internal {
namespace {

constexpr std::uint32_t chunk_bits = 10;
constexpr std::uint32_t chunk_size = 1u << chunk_bits;
constexpr std::uint32_t max_chunks = 1u << 16;  // 2^26 fat locks: far below the 2^31 a word holds

// Chunk pointers are published once and never change: readers need no lock.
std::atomic<fat_lock*> chunks[max_chunks];

struct table_state {
    std::mutex lock;  // allocation and release only: inflation is a slow path
    std::vector<std::uint32_t> free;
    std::uint32_t next = 0;  // entries created so far
    std::size_t live = 0;
    std::uint64_t inflations = 0;
};
table_state& state() {
    static table_state* s = new table_state;  // never destroyed: locks may outlive statics
    return *s;
}

}  // namespace

std::uint32_t sync_table_allocate() {
    auto& t = state();
    std::lock_guard guard(t.lock);
    ++t.live;
    ++t.inflations;
    if (!t.free.empty()) {
        const std::uint32_t index = t.free.back();
        t.free.pop_back();
        return index;
    }
    const std::uint32_t index = t.next;
    if ((index >> chunk_bits) >= max_chunks) throw std::bad_alloc();
    if ((index & (chunk_size - 1)) == 0)
        chunks[index >> chunk_bits].store(new fat_lock[chunk_size], std::memory_order_release);
    ++t.next;
    return index;
}

fat_lock& sync_table_at(std::uint32_t index) noexcept {
    return chunks[index >> chunk_bits].load(std::memory_order_acquire)[index & (chunk_size - 1)];
}

void sync_table_release(std::uint32_t index) noexcept {
    fat_lock& f = sync_table_at(index);
    f.owner.store(0, std::memory_order_relaxed);
    f.recursion = 0;
    auto& t = state();
    std::lock_guard guard(t.lock);
    --t.live;
    t.free.push_back(index);  // a vector at most as long as the peak of live entries
}

sync_table_counts sync_table_stats() noexcept {
    auto& t = state();
    std::lock_guard guard(t.lock);
    return {t.live, t.next, t.inflations};
}

}  // namespace contend::internal
