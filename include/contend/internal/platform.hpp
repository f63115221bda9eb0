// The platform names under their old internal spelling, for code not yet moved to the public
// headers (the lab). New code includes contend/cache_padded.hpp and contend/cpu_relax.hpp and
// says contend::cache_padded, contend::cache_line_size and contend::cpu_relax: this header
// defines nothing, and the library itself no longer includes it.
#pragma once

#include "contend/cache_padded.hpp"
#include "contend/cpu_relax.hpp"

namespace contend::internal {

using contend::cache_line_size;
using contend::cache_padded;
using contend::cpu_relax;

}  // namespace contend::internal
