#include "pool/os_thread.hpp"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

#if CONTEND_MODEL_CHECK
#include "model/model.hpp"
#endif

namespace contend::internal {
namespace {

// fail_thread_starts_after's budget: starts left before they fail, or < 0 for no limit.
std::atomic<int> starts_left{-1};

// Whether this start must fail, by fail_thread_starts_after.
bool start_refused() noexcept {
    int n = starts_left.load(std::memory_order_relaxed);
    while (n > 0 && !starts_left.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
    }
    return n == 0;
}

#if !CONTEND_MODEL_CHECK
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
#endif

}  // namespace

void fail_thread_starts_after(int starts) noexcept { starts_left.store(starts, std::memory_order_relaxed); }

void set_current_thread_name(const std::string& name) noexcept {
#if defined(__linux__)
    const std::string short_name = name.substr(0, 15);  // the kernel's limit, 16 with the NUL
    pthread_setname_np(pthread_self(), short_name.c_str());
#else
    (void)name;
#endif
}

#if CONTEND_MODEL_CHECK
// The model-checking build runs the pool's service threads as model threads
// (docs/design/model-checking.md): a pthread's start and join are outside the model. Name and
// stack size do not matter there.
os_thread::os_thread(const std::string&, std::size_t, std::function<void()> body) {
    if (start_refused()) throw std::system_error(EAGAIN, std::generic_category(), "pthread_create");
    handle_ = reinterpret_cast<unsigned long>(new model::thread(std::move(body)));
    started_ = true;
}
#else
os_thread::os_thread(const std::string& name, std::size_t stack_size, std::function<void()> body) {
    pthread_attr_t attr;
    if (int e = pthread_attr_init(&attr); e != 0)
        throw std::system_error(e, std::generic_category(), "pthread_attr_init");
    if (stack_size != 0) pthread_attr_setstacksize(&attr, stack_size);
    auto args = std::make_unique<start_args>(start_args{name, std::move(body)});
    pthread_t t{};
    const int e = start_refused() ? EAGAIN : pthread_create(&t, &attr, &thread_main, args.get());
    pthread_attr_destroy(&attr);
    if (e != 0) throw std::system_error(e, std::generic_category(), "pthread_create");
    args.release();  // the thread owns it now
    handle_ = static_cast<unsigned long>(t);
    started_ = true;
}
#endif

os_thread::os_thread(os_thread&& other) noexcept
    : handle_(std::exchange(other.handle_, 0)), started_(std::exchange(other.started_, false)) {}

os_thread& os_thread::operator=(os_thread&& other) noexcept {
    if (this != &other) {
        if (started_) join();
        handle_ = std::exchange(other.handle_, 0);
        started_ = std::exchange(other.started_, false);
    }
    return *this;
}

os_thread::~os_thread() {
    if (started_) join();
}

void os_thread::join() {
    if (!started_) return;
#if CONTEND_MODEL_CHECK
    auto* t = reinterpret_cast<model::thread*>(handle_);
    t->join();
    delete t;
#else
    pthread_join(static_cast<pthread_t>(handle_), nullptr);
#endif
    started_ = false;
}

}  // namespace contend::internal
