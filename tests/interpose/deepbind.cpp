// interpose_deepbind: a plugin loaded with dlopen(..., RTLD_DEEPBIND) binds its pthread calls
// to glibc, the program to the interposer, and they share a mutex. Both cannot run one mutex:
// glibc's lock knows nothing of contend's, and a thread of the plugin waiting in glibc's lock
// for a mutex the program holds was never woken. The interposer must notice a kind-0 mutex
// that glibc's functions hold (glibc records an owner; contend's locks never do) and refuse
// with a message, instead of running on. Without the interposer, or under --lock glibc, both
// sides are glibc and the program must simply work.
//
// The case runs in a child: the plugin takes the mutex; a thread of the program then waits
// for it. Expected: under our locks the child stops with the message on stderr; else it exits
// 0. Every wait is bounded (the child's alarm, the parent's deadline). argv[1]: the plugin.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void fail(const char* why, const std::string& detail = "") {
    std::printf("FAIL deepbind: %s %s\n", why, detail.c_str());
    std::fflush(stdout);
    std::_Exit(1);
}

pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
long counter = 0;

[[noreturn]] void child(const char* plugin_path) {
    alarm(20);
    void* plugin = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (plugin == nullptr) _exit(20);
    auto plugin_lock = reinterpret_cast<int (*)(pthread_mutex_t*)>(dlsym(plugin, "plugin_lock"));
    auto plugin_unlock = reinterpret_cast<int (*)(pthread_mutex_t*)>(dlsym(plugin, "plugin_unlock"));
    if (plugin_lock == nullptr || plugin_unlock == nullptr) _exit(21);
    if (plugin_lock(&shared) != 0) _exit(22);
    pthread_t t;
    pthread_create(
        &t, nullptr,
        [](void*) -> void* {
            pthread_mutex_lock(&shared);  // the program's call: the interposer's, when preloaded
            ++counter;
            pthread_mutex_unlock(&shared);
            return nullptr;
        },
        nullptr);
    usleep(100'000);  // the thread waits for the plugin's hold
    ++counter;
    plugin_unlock(&shared);
    pthread_join(t, nullptr);
    _exit(counter == 2 ? 0 : 23);
}

}  // namespace

int main(int argc, char** argv) {
    alarm(60);
    if (argc < 2) fail("usage: interpose_deepbind PLUGIN");
    auto active = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "contend_interpose_active"));
    const std::string lock = active ? active() : "none";
    const bool ours = lock != "none" && lock != "glibc";

    int err[2];
    if (pipe(err) != 0) fail("pipe");
    const pid_t pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
        dup2(err[1], STDERR_FILENO);
        close(err[0]);
        child(argv[1]);
    }
    close(err[1]);
    std::string stderr_text;
    char buffer[4096];
    for (ssize_t n; (n = read(err[0], buffer, sizeof buffer)) > 0;) stderr_text.append(buffer, static_cast<size_t>(n));
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; (done = waitpid(pid, &status, WNOHANG)) == 0 && waited_ms < 30'000; waited_ms += 5)
        usleep(5000);
    if (done == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail("the child did not finish in 30 s", stderr_text);
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) fail("the child hung (its alarm fired)", stderr_text);
    if (!ours) {
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail(("under " + lock + " the child failed, status " + std::to_string(status)).c_str(), stderr_text);
        std::printf("ok deepbind: under %s the plugin and the program share the mutex\n", lock.c_str());
        return 0;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        fail(("under " + lock + " the child ran on with the mutex run by two locks").c_str(), stderr_text);
    if (stderr_text.find("held by glibc's pthread_mutex_lock") == std::string::npos ||
        stderr_text.find("RTLD_DEEPBIND") == std::string::npos)
        fail("the child stopped without the interposer's message:", stderr_text);
    std::printf("ok deepbind: under %s the interposer refused a mutex glibc holds, with its message\n", lock.c_str());
    return 0;
}
