// os_thread's start and join on pthreads (the model-checking build has os_thread_model.cpp
// instead; CMakeLists.txt chooses).
#include <pthread.h>
#ifdef __linux__
#include <sched.h>
#endif

#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>

#include "pool/os_thread.hpp"

namespace contend::internal {
namespace {

struct start_args {
    std::string name;
    std::function<void()> body;
};

void* thread_main(void* p) {
    std::unique_ptr<start_args> args(static_cast<start_args*>(p));
    set_current_thread_name(args->name);
    args->body();
    return nullptr;
}

}  // namespace

os_thread::os_thread(const std::string& name, std::size_t stack_size, std::function<void()> body) {
    pthread_attr_t attr;
    if (int e = pthread_attr_init(&attr); e != 0)
        throw std::system_error(e, std::generic_category(), "pthread_attr_init");
    if (stack_size != 0) pthread_attr_setstacksize(&attr, stack_size);
    auto args = std::make_unique<start_args>(start_args{name, std::move(body)});
    pthread_t t{};
    const int e = thread_start_refused() ? EAGAIN : pthread_create(&t, &attr, &thread_main, args.get());
    pthread_attr_destroy(&attr);
    if (e != 0) throw std::system_error(e, std::generic_category(), "pthread_create");
    args.release();  // the thread owns it now
    handle_ = static_cast<unsigned long>(t);
    started_ = true;
}

void os_thread::join() {
    if (!started_) return;
    pthread_join(static_cast<pthread_t>(handle_), nullptr);
    started_ = false;
}

#ifdef __linux__
int current_thread_cpu() noexcept { return sched_getcpu(); }

int move_current_thread_to_free_cpu(function_ref<bool(int)> taken) noexcept {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed) || taken(cpu)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        // The kernel migrates a running thread before sched_setaffinity returns; the second
        // call, whose mask holds the CPU it is on now, moves nothing.
        if (sched_setaffinity(0, sizeof one, &one) != 0) return -1;
        if (sched_setaffinity(0, sizeof allowed, &allowed) != 0) {
            // Its cpuset shrank meanwhile, away from every CPU it had: every CPU, which the
            // kernel narrows to the cpuset's, rather than leave it on one.
            cpu_set_t every;
            std::memset(&every, 0xff, sizeof every);
            (void)sched_setaffinity(0, sizeof every, &every);
        }
        return cpu;
    }
    return -1;
}
#else
int current_thread_cpu() noexcept { return -1; }
int move_current_thread_to_free_cpu(function_ref<bool(int)>) noexcept { return -1; }
#endif

}  // namespace contend::internal
