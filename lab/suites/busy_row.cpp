// A suite's busy-loop row (suites.hpp): one of its rows again, beside busy loops.
#include <algorithm>
#include <stdexcept>

#include "suites/suites.hpp"

namespace contend::lab {

void add_busy_loop_row(suite& s, const std::string& quiet_id, std::int32_t loops, std::int32_t nice) {
    const auto quiet =
        std::find_if(s.contenders.begin(), s.contenders.end(), [&](const contender& c) { return c.id() == quiet_id; });
    if (quiet == s.contenders.end()) throw std::logic_error("suite " + s.name + " has no row " + quiet_id);
    contender busy = *quiet;
    busy.cotenant.busy_loops = loops;
    busy.cotenant.busy_nice = nice;
    for (auto& param : cotenant_params({loops, nice, false})) busy.params.push_back(std::move(param));
    busy.description += ", beside " + describe_cotenant(loops, nice, -1);
    s.contenders.insert(quiet + 1, std::move(busy));
}

}  // namespace contend::lab
