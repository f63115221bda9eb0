// The part of the report page that shows where a profiled program waits: for each profiled
// `contend run` row (cell_result::lock_profile), its locks that waited most, each with its
// figures (contended of acquisitions, total wait, p50/p90/p99/max), a bar chart of its waits
// by duration (the profile's histogram, a canvas the page's script draws) and its stacks with
// their share of the lock's sampled waits, innermost frame first. Every name (a site, a frame)
// reaches the page as escaped text only. Internal to the lab (namespace contend::lab).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "results/results.hpp"

namespace contend::lab {

// Appends to `html` the block of each cell that has a lock profile, and to `charts` one entry
// per lock drawn ({"canvas", "title", "labels", "counts"}); canvases are named
// "<id_prefix>-<cell>-<lock>". Throws std::runtime_error naming the cell when its profile's
// text is malformed (results/lock_profile.hpp). Returns the count of charts appended.
std::size_t lock_profile_html(std::string& html, nlohmann::json& charts, const std::string& id_prefix,
                              const std::vector<const cell_result*>& cells);

// A duration as the page writes it: "850 ns", "12.5 µs", "3.2 ms", "1.05 s" (3 significant
// digits at most).
std::string duration_text(double ns);

}  // namespace contend::lab
