// Numbers as the lab prints them in sentences, tables and reports: one rule per kind of
// figure, so that a time reads the same in `contend bench`, `compare`, `history` and a page.
#pragma once

#include <string>

namespace contend::lab {

// `v` with `digits` decimals, never an exponent; "-" when not finite.
std::string format_fixed(double v, int digits);

// Nanoseconds as text: three significant figures or more, never an exponent ("512", "40.3",
// "2.57"); "-" when not finite. The lab's one rule for a time in a sentence.
std::string ns_text(double ns);

// A time per operation with its unit: ns_text and " ns" from 0.01 ns to 10,000 ns ("12.3
// ns", "1234 ns"), then us, ms and s ("123.5 us", "2.5 s"); below 0.01 ns and past 10^5 s,
// three significant figures with an exponent ("1e-300 ns", "1e+291 s"), never hundreds of
// digits; "inf ns" and "nan ns" as such.
std::string format_time_per_op(double ns);

// A relative change, (after - before) / before, in percent with a sign: "+20.0 %", and with
// an exponent past 100,000 % ("+1e+05 %"); "inf %" and "nan %" as such.
std::string format_change_percent(double before, double after);

}  // namespace contend::lab
