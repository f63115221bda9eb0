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
    std::printf("consumer: counter=%ld (expected 40000), wait backend %s\n", counter, contend::wait_backend_name());
    return counter == 40000 ? 0 : 1;
}
