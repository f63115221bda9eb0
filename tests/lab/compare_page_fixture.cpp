// Writes the inputs of tests/lab/compare_page_browser_test.sh into a folder: history.db (the
// stepped 12-run history of compare_page_fixture.hpp), base.json and test.json (Google
// Benchmark files with a hostile benchmark name). The browser test then writes the pages with
// the contend CLI, as a user would. Usage: test_lab_compare_page_fixture <folder>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "compare_page_fixture.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: " << argv[0] << " <folder>\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    try {
        std::filesystem::create_directories(dir);
        contend_test::write_page_history((dir / "history.db").string(), true);
        std::ofstream(dir / "base.json", std::ios::binary) << contend_test::page_gb_base();
        std::ofstream(dir / "test.json", std::ios::binary) << contend_test::page_gb_test();
    } catch (const std::exception& e) {
        std::cerr << argv[0] << ": " << e.what() << "\n";
        return 1;
    }
    return 0;
}
