#include "suites/runner.hpp"

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>

#include "suites/harness.hpp"
#include "suites/run_info.hpp"

namespace gwcli::bench {
namespace {

void print_row(const Result& r) {
  std::cout << std::left << std::setw(4) << r.suite << std::setw(34) << r.case_name << std::right << std::setw(12)
            << std::setprecision(4) << r.ours << std::setw(12) << r.peer << "  " << std::left << std::setw(8) << r.unit
            << std::setw(16) << r.peer_name << std::right << std::setw(8) << std::setprecision(3) << r.ratio;
  if (r.extra.contains("target")) {
    const auto& target = r.extra["target"];
    std::cout << "  target " << (target.is_string() ? target.get<std::string>() : target.dump());
  }
  std::cout << "\n";
}

}  // namespace

int run(const RunArgs& args) {
  std::set<std::string> wanted;
  for (size_t start = 0; start < args.suites.size();) {
    size_t comma = args.suites.find(',', start);
    if (comma == std::string::npos) comma = args.suites.size();
    if (comma > start) wanted.insert(args.suites.substr(start, comma - start));
    start = comma + 1;
  }
  std::set<std::string> known;
  for (const auto& s : suites()) known.insert(s.id);
  // P9, T1-T5, C1, validation: bench/run.py's harness, one at a time.
  for (const auto& h : harness_benchmarks())
    if (wanted.count(h)) {
      if (wanted.size() != 1) {
        std::cerr << "gradwire bench: " << h << " runs alone (bench/run.py " << h << "); give --suite " << h
                  << " by itself\n";
        return 2;
      }
      return run_harness(h, args.harness_args);
    }
  if (!args.harness_args.empty()) {
    std::cerr << "gradwire bench: options after -- are for the harness benchmarks (--suite P9, T1-T5, C1 or "
                 "validation); the suites P1-P8 take the options above\n";
    return 2;
  }
  for (const auto& h : harness_benchmarks()) known.insert(h);
  for (const auto& w : wanted)
    if (!known.count(w)) {
      std::cerr << "gradwire bench: unknown suite '" << w << "'; known:";
      for (const auto& k : known) std::cerr << " " << k;
      std::cerr << "\n";
      return 2;
    }
  const nlohmann::json info = run_info();
  nlohmann::json results = nlohmann::json::array();
  if (!args.json)
    std::cout << std::left << std::setw(4) << "id" << std::setw(34) << "case" << std::right << std::setw(12) << "ours"
              << std::setw(12) << "peer" << "  " << std::left << std::setw(8) << "unit" << std::setw(16) << "peer name"
              << std::right << std::setw(8) << "ratio" << "\n";
  // --transport: every rank this run starts (forked, or through `gradwire run`) inherits the choice.
  if (!args.options.transport.empty()) setenv("GRADWIRE_TRANSPORT_INTER", args.options.transport.c_str(), 1);
  const Emit emit = [&](const Result& given) {
    Result r = given;
    if (!args.options.transport.empty()) {
      r.case_name = args.options.transport + " " + r.case_name;
      r.extra["transport"] = args.options.transport;
    }
    nlohmann::json j = {{"suite", r.suite}, {"case", r.case_name}, {"ours", r.ours},  {"peer", r.peer},
                        {"unit", r.unit},   {"ratio", r.ratio},    {"peer_name", r.peer_name}};
    for (auto& [k, v] : r.extra.items()) j[k] = v;
    if (!args.out.empty()) results.push_back(j);
    if (args.json) {
      // Every line stands alone: a consumer that keeps one line keeps where and how it was measured.
      j["run"] = info;
      std::cout << j.dump() << std::endl;
    } else {
      print_row(r);
      std::cout.flush();
    }
  };
  nlohmann::json ran = nlohmann::json::array();
  for (const auto& s : suites())
    if (wanted.empty() || wanted.count(s.id)) {
      s.run(args.options, emit);
      ran.push_back(s.id);
    }
  if (!args.out.empty()) {
    nlohmann::json document = info;
    document["suites"] = ran;
    document["results"] = results;
    std::ofstream file(args.out);
    file << document.dump(2) << "\n";
    if (!file) {
      std::cerr << "gradwire bench: cannot write " << args.out << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace gwcli::bench
