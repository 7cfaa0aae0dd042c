// Shell-style name patterns for entitlements: '*' matches any run of
// characters (also none), '?' exactly one; everything else matches itself
// (case-sensitive). "EUR*", "*.L", "VOD.?" and "*" are typical.
#pragma once

#include <string_view>

namespace mdcast {

// Linear in pattern + text length for all but pathological patterns (the
// classic greedy matcher that backtracks only to the last '*').
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace mdcast
