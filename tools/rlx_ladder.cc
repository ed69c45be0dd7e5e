// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_ladder: which bucket ladder to compile for the lengths an executor
// sees. Reads observed lengths and compares, at the same bucket count, the
// power-of-two, geometric, capped and fitted ladders (rlx/bucket_ladder.h):
// each ladder's extents, mean and worst padding, and expected cost relative
// to running every length unpadded, for decode and prefill costs.
//
// Input (a file, or stdin when FILE is "-" or absent): one observation per
// line, "length" or "length count", positive decimal integers separated by
// blanks; blank lines and lines starting with '#' are skipped. Bad input
// (anything else on a line, a 0, no lengths at all) is reported with the
// file and line, exit status 2.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/bucket_ladder.h"

namespace {

constexpr int kBadInput = 2;

constexpr char kUsage[] =
    "usage: rlx_ladder [--buckets N] [--json] [FILE]\n"
    "\n"
    "Reads observed sequence lengths from FILE (or stdin when FILE is '-' or\n"
    "absent), one per line as 'length' or 'length count' (positive integers;\n"
    "blank lines and lines starting with '#' are skipped), and compares the\n"
    "ladders of N buckets over [1, max length]:\n"
    "  pow2         power-of-two extents ending at next_pow2(max)\n"
    "  geometric    BucketLadder::geometric(max, N)\n"
    "  capped       BucketLadder::capped at the least max padding N buckets "
    "allow\n"
    "  fit-decode   BucketLadder::fit, cost(upper) = upper\n"
    "  fit-prefill  BucketLadder::fit, cost(upper) = upper^2\n"
    "For each: its extents, the mean and worst padding of the observations\n"
    "(a key k run at extent u is padded by (u - k) / k), and the decode and\n"
    "prefill cost relative to running every length unpadded (1 = no\n"
    "padding).\n"
    "\n"
    "  --buckets N  buckets per ladder (default: as many as the power-of-two\n"
    "               ladder from 1 has, 1 + ceil(log2(max)); at most max)\n"
    "  --json       print JSON instead of tables\n"
    "Exit status: 0 on success, 2 on bad input or arguments.\n";

// A message for the user; main prints it and exits with status 2.
struct BadInput {
  std::string message;
};

std::optional<std::uint64_t> ParsePositive(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// The observations of `in` as a histogram, length -> count.
std::map<std::uint64_t, std::uint64_t> ReadLengths(std::istream& in,
                                                   const std::string& name) {
  std::map<std::uint64_t, std::uint64_t> histogram;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = name + ":" + std::to_string(number) + ": ";
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string w; fields >> w;) words.push_back(w);
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() > 2) {
      throw BadInput{where + "'" + line +
                     "': expected 'length' or 'length count'"};
    }
    std::uint64_t values[2] = {0, 1};
    const char* what[2] = {"length", "count"};
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::optional<std::uint64_t> v = ParsePositive(words[i]);
      if (!v) {
        throw BadInput{where + what[i] + " '" + words[i] +
                       "' is not a non-negative integer below 2^64"};
      }
      if (*v == 0) {
        throw BadInput{where + what[i] + " 0: " + what[i] + "s must be >= 1"};
      }
      values[i] = *v;
    }
    if (values[0] > (std::uint64_t{1} << 62)) {
      throw BadInput{where + "length " + words[0] +
                     " is above 2^62, longer than any ladder here handles"};
    }
    std::uint64_t& count = histogram[values[0]];
    if (values[1] > std::numeric_limits<std::uint64_t>::max() - count) {
      throw BadInput{where + "the counts of length " + words[0] +
                     " add up past 2^64"};
    }
    count += values[1];
  }
  if (histogram.empty()) {
    throw BadInput{name + ": no lengths (empty input)"};
  }
  return histogram;
}

struct Stats {
  std::string name;
  std::vector<std::uint64_t> extents;
  double mean_padding = 0;            // count-weighted mean of (u - k) / k
  double worst_padding = 0;           // max over observed k of (u - k) / k
  double decode_cost = 0;             // sum c * u / sum c * k
  double prefill_cost = 0;            // sum c * u^2 / sum c * k^2
  std::optional<double> max_padding;  // capped's parameter
};

Stats Evaluate(const std::string& name, const rlx::BucketLadder& ladder,
               const std::map<std::uint64_t, std::uint64_t>& histogram) {
  Stats s;
  s.name = name;
  for (const rlx::Bucket& b : ladder.buckets()) s.extents.push_back(b.upper());
  long double observations = 0, padding = 0;
  long double decode = 0, decode_unpadded = 0;
  long double prefill = 0, prefill_unpadded = 0;
  for (const auto& [length, count] : histogram) {
    const std::optional<std::size_t> i = ladder.bucket_for(length);
    // Every ladder here covers [1, max]; a miss would be a library bug.
    if (!i) throw std::logic_error("rlx_ladder: a length fell in no bucket");
    const long double u = static_cast<long double>(ladder[*i].upper());
    const long double k = static_cast<long double>(length);
    const long double c = static_cast<long double>(count);
    const long double pad = (u - k) / k;
    observations += c;
    padding += c * pad;
    s.worst_padding = std::max(s.worst_padding, static_cast<double>(pad));
    decode += c * u;
    decode_unpadded += c * k;
    prefill += c * u * u;
    prefill_unpadded += c * k * k;
  }
  s.mean_padding = static_cast<double>(padding / observations);
  s.decode_cost = static_cast<double>(decode / decode_unpadded);
  s.prefill_cost = static_cast<double>(prefill / prefill_unpadded);
  return s;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * ratio);
  return buf;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Shortest(double v) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, result.ptr);
}

void PrintText(const std::vector<Stats>& all, std::uint64_t observations,
               std::size_t distinct, std::uint64_t min, std::uint64_t max,
               std::size_t buckets) {
  std::cout << observations << " observations of " << distinct
            << " distinct lengths in [" << min << ", " << max << "]; up to "
            << buckets << " buckets per ladder\n\n";
  std::printf("%-12s %7s %9s %9s %12s %13s\n", "ladder", "buckets", "mean pad",
              "worst pad", "decode cost", "prefill cost");
  for (const Stats& s : all) {
    std::printf(
        "%-12s %7zu %9s %9s %12s %13s\n", s.name.c_str(), s.extents.size(),
        Percent(s.mean_padding).c_str(), Percent(s.worst_padding).c_str(),
        Fixed(s.decode_cost, 4).c_str(), Fixed(s.prefill_cost, 4).c_str());
  }
  std::cout << "\nextents\n";
  for (const Stats& s : all) {
    std::cout << "  " << s.name << ":";
    for (std::uint64_t e : s.extents) std::cout << ' ' << e;
    if (s.max_padding) {
      std::cout << "  (max_padding " << Shortest(*s.max_padding) << ")";
    }
    std::cout << '\n';
  }
  std::cout << "\npadding of a key k run at extent u: (u - k) / k; cost: "
               "sum of cost(u) over the\nobservations / sum of cost(k), "
               "decode cost(u) = u, prefill cost(u) = u^2\n";
}

void PrintJson(const std::vector<Stats>& all, std::uint64_t observations,
               std::size_t distinct, std::uint64_t min, std::uint64_t max,
               std::size_t buckets) {
  std::cout << "{\n  \"observations\": " << observations
            << ",\n  \"distinct\": " << distinct << ",\n  \"min\": " << min
            << ",\n  \"max\": " << max << ",\n  \"buckets\": " << buckets
            << ",\n  \"ladders\": [";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Stats& s = all[i];
    std::cout << (i ? "," : "") << "\n    {\"name\": \"" << s.name
              << "\", \"extents\": [";
    for (std::size_t j = 0; j < s.extents.size(); ++j) {
      std::cout << (j ? ", " : "") << s.extents[j];
    }
    std::cout << "], \"mean_padding\": " << Shortest(s.mean_padding)
              << ", \"worst_padding\": " << Shortest(s.worst_padding)
              << ", \"decode_cost\": " << Shortest(s.decode_cost)
              << ", \"prefill_cost\": " << Shortest(s.prefill_cost);
    if (s.max_padding) {
      std::cout << ", \"max_padding\": " << Shortest(*s.max_padding);
    }
    std::cout << "}";
  }
  std::cout << "\n  ]\n}\n";
}

int Run(int argc, char** argv) {
  std::optional<std::size_t> buckets;
  bool json = false;
  std::string file = "-";
  bool have_file = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--json") {
      json = true;
    } else if (arg == "--buckets" || arg.rfind("--buckets=", 0) == 0) {
      std::string value;
      if (arg == "--buckets") {
        if (i + 1 >= argc) throw BadInput{"--buckets needs a value"};
        value = argv[++i];
      } else {
        value = arg.substr(10);
      }
      const std::optional<std::uint64_t> n = ParsePositive(value);
      if (!n) {
        throw BadInput{"--buckets '" + value + "' is not a number"};
      }
      if (*n == 0) throw BadInput{"--buckets 0: must be >= 1"};
      buckets = static_cast<std::size_t>(
          std::min<std::uint64_t>(*n, std::numeric_limits<std::size_t>::max()));
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw BadInput{"unknown option " + arg + " (see --help)"};
    } else if (have_file) {
      throw BadInput{"more than one FILE: " + file + ", " + arg};
    } else {
      file = arg;
      have_file = true;
    }
  }

  std::map<std::uint64_t, std::uint64_t> histogram;
  if (file == "-") {
    histogram = ReadLengths(std::cin, "<stdin>");
  } else {
    std::ifstream in(file);
    if (!in) throw BadInput{file + ": cannot open"};
    histogram = ReadLengths(in, file);
  }
  const std::uint64_t min = histogram.begin()->first;
  const std::uint64_t max = histogram.rbegin()->first;
  std::uint64_t observations = 0;
  std::vector<rlx::LengthCount> counts;
  for (const auto& [length, count] : histogram) {
    counts.push_back({length, count});
    if (count > std::numeric_limits<std::uint64_t>::max() - observations) {
      throw BadInput{file + ": the counts add up past 2^64"};
    }
    observations += count;
  }
  const rlx::BucketLadder pow2_from_one =
      rlx::BucketLadder::power_of_two(1, max);
  // More buckets than keys cannot help (fit pads nothing from max on).
  const std::size_t n = static_cast<std::size_t>(
      std::min<std::uint64_t>(buckets.value_or(pow2_from_one.size()), max));

  std::vector<Stats> all;
  // Power of two with at most n buckets: the first extent is next_pow2(max)
  // halved n - 1 times (at least 1).
  const std::uint64_t top = std::bit_ceil(max);
  const std::uint64_t first =
      n - 1 >= 63 ? 1 : std::max<std::uint64_t>(1, top >> (n - 1));
  all.push_back(
      Evaluate("pow2", rlx::BucketLadder::power_of_two(first, max), histogram));
  all.push_back(
      Evaluate("geometric", rlx::BucketLadder::geometric(max, n), histogram));
  const double p = rlx::BucketLadder::least_max_padding(max, n);
  Stats capped =
      Evaluate("capped", rlx::BucketLadder::capped(max, p), histogram);
  capped.max_padding = p;
  all.push_back(capped);
  all.push_back(Evaluate(
      "fit-decode", rlx::BucketLadder::fit(counts, n, rlx::ladder_cost::decode),
      histogram));
  all.push_back(Evaluate(
      "fit-prefill",
      rlx::BucketLadder::fit(counts, n, rlx::ladder_cost::prefill), histogram));

  if (json) {
    PrintJson(all, observations, histogram.size(), min, max, n);
  } else {
    PrintText(all, observations, histogram.size(), min, max, n);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const BadInput& e) {
    std::cerr << "rlx_ladder: " << e.message << '\n';
    return kBadInput;
  } catch (const std::invalid_argument& e) {
    std::cerr << "rlx_ladder: " << e.what() << '\n';
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "rlx_ladder: internal error: " << e.what() << '\n';
    return 1;
  }
}
