// Small string helpers shared by the configuration, the loader and the messages of communicators.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gw {

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, or "" when none is close enough to be a plausible typo.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::vector<std::string> split(std::string_view text, char separator);
// FNV-1a 32-bit hash: the codec id of the wire header, and config hashes.
uint32_t fnv1a32(std::string_view data);
uint64_t fnv1a64(std::string_view data);
// Ranks in a message: "rank 3", "ranks 1, 2 and 5"; past `most` named, "... and N more".
std::string rank_list(const std::vector<uint32_t>& ranks, size_t most = 16);

}  // namespace gw
