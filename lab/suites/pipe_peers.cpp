// The pipe suite's peers: moodycamel's BlockingReaderWriterQueue behind the suite's
// transport (suites/pipe_workload.hpp), compiled only when found at build time.
#include "suites/pipe_peers.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

#include "contend/internal/tsan.hpp"
#include "suites/pipe_suite.hpp"

#if CONTEND_HAVE_RWQ
#include <readerwriterqueue/readerwriterqueue.h>
#endif

namespace contend::lab {
namespace {

#if CONTEND_HAVE_RWQ
// A queue of chunks, not of bytes: a fixed set of chunk-sized buffers circulates through two
// BlockingReaderWriterQueues (single producer, single consumer each), full_ from the writer
// to the reader and free_ back, so nothing is allocated per chunk (both queues are sized for
// every buffer at once, and try_enqueue never allocates). 64 KiB of buffers, as the other
// transports hold (two at 64 KiB, so the sides can overlap). Every wait is
// wait_dequeue_timed, so each side polls its flag. The queue annotates its hand-offs for
// ThreadSanitizer only under clang (__has_feature), so the buffers' are annotated here.
class rwq_chunks {
public:
    explicit rwq_chunks(std::size_t chunk)
        : chunk_(chunk),
          count_(std::max<std::size_t>(2, pipe_bench::window_bytes / chunk)),
          storage_(chunk * count_),
          full_(count_),
          free_(count_) {
        for (std::size_t i = 0; i < count_; ++i)
            if (!free_.try_enqueue(storage_.get() + i * chunk_)) throw std::logic_error("rwq: the free queue is full");
    }

    std::size_t write(std::span<const std::byte> chunk, const std::atomic<bool>& stop) {
        std::byte* buffer = nullptr;
        while (!free_.wait_dequeue_timed(buffer, poll_us))
            if (stop.load(std::memory_order_relaxed)) return 0;
        contend::internal::tsan_only_acquired(buffer);
        std::memcpy(buffer, chunk.data(), chunk.size());
        contend::internal::tsan_only_releasing(buffer);
        if (!full_.try_enqueue(buffer)) throw std::logic_error("rwq: the full queue is full");
        return chunk.size();
    }

    template <class Sink>
    void read_loop(Sink& sink, const std::atomic<bool>& quit) {
        for (;;) {
            std::byte* buffer = nullptr;
            if (!full_.wait_dequeue_timed(buffer, poll_us)) {
                if (quit.load()) return;
                continue;
            }
            contend::internal::tsan_only_acquired(buffer);
            sink(std::span<const std::byte>(buffer, chunk_));
            contend::internal::tsan_only_releasing(buffer);
            if (!free_.try_enqueue(buffer)) throw std::logic_error("rwq: the free queue is full");
        }
    }
    void close() {}  // the reader polls quit

private:
    static constexpr std::int64_t poll_us = 10'000;
    const std::size_t chunk_;
    const std::size_t count_;
    pipe_bench::aligned_bytes storage_;
    moodycamel::BlockingReaderWriterQueue<std::byte*> full_, free_;
};
#endif

}  // namespace

void append_peer_pipes(std::vector<contender>& out) {
#if CONTEND_HAVE_RWQ
    append_pipe_rows<rwq_chunks>(out, "readerwriterqueue",
                                 "moodycamel::BlockingReaderWriterQueue of recycled chunk buffers");
#endif
    (void)out;
}

}  // namespace contend::lab
