#include <map>

#include "sync/synchronizer.hpp"

namespace gw::sync {

bool glob_match(const std::string& pattern, const std::string& name) {
  // Iterative matching with one backtrack point: the last '*' and where its match may grow from.
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string codec_for(const std::vector<Rule>& rules, const std::string& name, uint64_t bytes,
                      const std::string& fallback) {
  for (const Rule& r : rules)
    if (glob_match(r.match, name) && (r.max_bytes == 0 || bytes <= r.max_bytes)) return r.codec;
  return fallback;
}

std::vector<std::vector<uint32_t>> assign_buckets(std::vector<TensorEntry>& tensors, uint64_t bucket_bytes) {
  std::vector<std::vector<uint32_t>> buckets;
  std::vector<uint64_t> elements;
  std::map<std::string, uint32_t> open;  // codec -> its bucket that still takes tensors
  for (uint32_t i = 0; i < tensors.size(); ++i) {
    TensorEntry& t = tensors[i];
    auto it = open.find(t.codec);
    const bool fits = it != open.end() && 4 * (elements[it->second] + t.gradient.count) <= bucket_bytes;
    if (!fits) {
      buckets.emplace_back();
      elements.push_back(0);
      it = open.insert_or_assign(t.codec, uint32_t(buckets.size() - 1)).first;
    }
    t.bucket = it->second;
    t.offset = elements[t.bucket];
    elements[t.bucket] += t.gradient.count;
    buckets[t.bucket].push_back(i);
  }
  return buckets;
}

}  // namespace gw::sync
