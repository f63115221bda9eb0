// Programs whose profile used to be lost, for tests/lab/run_losses_test.cpp: each scenario
// contends a mutex a known number of times (one thread holds it while another's lock finds
// it held), in the ways a real program does that contend run's profile must survive.
//
//   reused       3 contentions at one address: a mutex destroyed and made again there, then
//                reset with PTHREAD_MUTEX_INITIALIZER (one lock in the profile, not a refusal)
//   fork         1 in the parent, 1 in a forked child that exits without exec
//   fork_exit    as fork, the child leaving through _exit
//   exec         1, then exec of this program as `once`: 1 more
//   once         1
//   killed       1 in the parent, 1 in a child that then dies of SIGKILL (its profile lost)
//   unwritable   1, then a folder made where the profile's temporary file goes (its write
//                fails, even for root)
//   drop         1, then setuid(65534) (nobody) and 1 more: run as root only
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "run_scenarios: %s: %s\n", what, std::strerror(errno));
    std::exit(2);
}

// One contended acquisition of m: a second thread takes m and holds it until this thread has
// said it is about to lock, and 50 ms more, so that this thread's lock finds it held.
void contend_once(pthread_mutex_t* m) {
    std::atomic<bool> held{false}, about_to_lock{false};
    std::thread holder([&] {
        pthread_mutex_lock(m);
        held = true;
        while (!about_to_lock) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pthread_mutex_unlock(m);
    });
    while (!held) std::this_thread::yield();
    about_to_lock = true;
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    holder.join();
}

pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;

int wait_child(pid_t child) {
    int status = 0;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "once") {
        contend_once(&shared);
    } else if (mode == "reused") {
        // The same bytes: destroyed and made again, then reset by assignment.
        auto* m = static_cast<pthread_mutex_t*>(std::malloc(sizeof(pthread_mutex_t)));
        pthread_mutex_init(m, nullptr);
        contend_once(m);
        pthread_mutex_destroy(m);
        pthread_mutex_init(m, nullptr);
        contend_once(m);
        *m = PTHREAD_MUTEX_INITIALIZER;
        contend_once(m);
        pthread_mutex_destroy(m);
        std::free(m);
    } else if (mode == "fork" || mode == "fork_exit" || mode == "killed") {
        contend_once(&shared);
        const pid_t child = fork();
        if (child < 0) fail("fork");
        if (child == 0) {
            contend_once(&shared);
            if (mode == "killed") raise(SIGKILL);
            if (mode == "fork_exit") _exit(0);
            std::exit(0);
        }
        const int status = wait_child(child);
        if (mode != "killed" && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) fail("the child failed");
    } else if (mode == "exec") {
        contend_once(&shared);
        execl(argv[0], argv[0], "once", static_cast<char*>(nullptr));
        fail("execl");
    } else if (mode == "unwritable") {
        contend_once(&shared);
        const char* dir = std::getenv("CONTEND_INTERPOSE_PROFILE");
        const std::string blocker = std::string(dir ? dir : "") + "/." + std::to_string(getpid()) + ".json.tmp";
        if (dir == nullptr || mkdir(blocker.c_str(), 0700) != 0) fail("mkdir in the profile folder");
    } else if (mode == "drop") {
        contend_once(&shared);
        if (setgid(65534) != 0 || setuid(65534) != 0) fail("setuid");
        contend_once(&shared);
    } else {
        std::fprintf(stderr, "run_scenarios: unknown scenario \"%s\"\n", mode.c_str());
        return 2;
    }
    return 0;
}
