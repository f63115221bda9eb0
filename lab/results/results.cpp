#include "results/results.hpp"

#include <cctype>

namespace contend::lab {
namespace {
std::string row_part(std::string s) {
    for (auto& ch : s) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (ch == ' ' || ch == '-') ch = '_';
    }
    return s;
}
}  // namespace

std::string cell_result::name() const {
    // Appends only: GCC 12 warns (-Wrestrict, a false positive) on "/" + std::string&&.
    std::string n = suite;
    n.append("/").append(row_part(contender));
    for (const auto& [k, v] : params) n.append("/").append(row_part(k)).append(":").append(v);
    n.append("/workers:").append(std::to_string(workers));
    return n;
}

std::size_t run_result::valid_cells() const {
    std::size_t n = 0;
    for (const auto& c : cells) n += c.valid() ? 1 : 0;
    return n;
}

}  // namespace contend::lab
