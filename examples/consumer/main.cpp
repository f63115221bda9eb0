#include <contend/contend.hpp>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

int main() {
    contend::mutex m;
    contend::condition_variable cv;
    long counter = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 10000; ++i) {
                std::lock_guard g(m);
                ++counter;
            }
            cv.notify_all();
        });
    }
    for (auto& t : threads) t.join();
    // The pool, through the installed headers: a submitted item's result comes back.
    contend::thread_pool pool(contend::thread_pool_options{.min_threads = 2, .max_threads = 4});
    auto answer = pool.submit([] { return 42; });
    const int got = answer.get();
    std::printf("consumer: counter=%ld (expected 40000), pool answered %d (expected 42), wait backend %s\n", counter,
                got, contend::wait_backend_name());
    return counter == 40000 && got == 42 ? 0 : 1;
}
