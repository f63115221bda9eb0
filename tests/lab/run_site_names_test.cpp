// contend run --profile, naming call sites (run/site_names.hpp): addr2line on this program,
// the fallbacks when it fails, and only the sites the table shows.
#include <dlfcn.h>
#include <sys/stat.h>
#include <filesystem>
#include <string>
#include <vector>

#include "run/site_names.hpp"
#include "run_profile_fixture.hpp"

// A function of this program for addr2line to name (outside the unnamed namespace: a global
// symbol, its name unmangled).
extern "C" __attribute__((noinline, used)) int contend_profile_test_site() { return 7; }

namespace {

using namespace contend_test;
namespace lab = contend::lab;

// A site's module: not a file, a tool that fails or prints nonsense, all leave the library's
// name (else module+offset) and say why.
TEST_F(RunProfile, SymbolizationFallsBackWhenAddr2lineFailsOrIsMissing) {
    write(path("module"), "not an ELF file");
    auto l = lock_json("0x10", 1);
    l["site"]["module"] = path("module");
    auto nameless = lock_json("0x20", 1);
    nameless["site"]["module"] = path("module");
    nameless["site"]["function"] = "";
    auto missing = lock_json("0x30", 1);  // /no/such/module
    missing["site"]["function"] = "";
    const std::string nonsense = path("nonsense.sh");
    write(nonsense, "#!/bin/sh\necho hello\n");
    chmod(nonsense.c_str(), 0755);
    for (const std::string& tool : {std::string("false"), std::string("/no/such/addr2line"), nonsense}) {
        auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, {l, nameless, missing}).dump())});
        const auto failures = lab::symbolize_sites(m, 20, tool);
        EXPECT_EQ(failures.size(), 2u) << tool;
        for (const auto& lock : m.locks) {
            EXPECT_EQ(lock.site_text(), lock.address == 0x10 ? "worker_loop" : "module+0x1234") << tool;
        }
    }
}

// The real addr2line on this test program names one of its own functions.
TEST_F(RunProfile, Addr2lineNamesAFunctionOfThisProgram) {
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&contend_profile_test_site), &info), 0);
    const auto address = reinterpret_cast<std::uintptr_t>(&contend_profile_test_site);
    // What the library writes: the offset in a position-independent executable (ELF e_type
    // ET_DYN, 3), the address itself in a fixed one (ET_EXEC, 2).
    const std::string elf = read("/proc/self/exe").substr(0, 18);
    ASSERT_EQ(elf.size(), 18u);
    const bool pie = elf[16] == 3;
    const auto base = pie ? reinterpret_cast<std::uintptr_t>(info.dli_fbase) : 0;
    char module_address[32];
    std::snprintf(module_address, sizeof module_address, "0x%zx", static_cast<std::size_t>(address - base));
    auto l = lock_json("0x10", 1);
    l["site"]["module"] = std::filesystem::read_symlink("/proc/self/exe").string();
    l["site"]["module_address"] = module_address;
    l["site"]["function"] = "";
    auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, {l}).dump())});
    const auto failures = lab::symbolize_sites(m);
    ASSERT_TRUE(failures.empty()) << failures.front();
    EXPECT_EQ(m.locks[0].site.symbol, "contend_profile_test_site") << m.locks[0].site_text();
}

// Only the locks the table shows are symbolized: a profile with thousands of modules costs at
// most 20 addr2line calls.
TEST_F(RunProfile, OnlyTheSitesOfTheLocksShownAreSymbolized) {
    std::vector<json> locks;
    for (int i = 1; i <= 25; ++i) {
        auto l = lock_json("0x" + std::to_string(i * 1000), static_cast<std::uint64_t>(i));
        l["site"]["module"] = "/no/such/module" + std::to_string(i);
        locks.push_back(l);
    }
    auto m = lab::merge_profiles({lab::parse_profile(profile_json(7, locks).dump())});
    EXPECT_EQ(lab::symbolize_sites(m, 20, "false").size(), 20u);
    EXPECT_EQ(lab::symbolize_sites(m, 1, "false").size(), 1u);
}

}  // namespace
