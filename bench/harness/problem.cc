// SPDX-License-Identifier: MIT OR Apache-2.0
// Parses the problems of bench/problem.h. Only syntax and the checks that
// need no data live here; the library's own checks run when a problem's
// data is built (bench/harness/workloads.cc), with its message.
#include "bench/harness/problem.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlx::bench {
namespace {

constexpr const char* kMaskRules =
    "none, causal, sliding=w, decode=PAST[:WINDOW], keep=f32|u8|bits, bias, "
    "window_keys=W, chunk=C, sink_keys=S, prefix=P, query_offset=N, "
    "segments=N, paged=BLOCK, valid=N";
constexpr const char* kSoftmaxOptions =
    "scale=F, softcap=F, sink_logits=F, alibi[=MAX_BIAS], lse, "
    "zero_masked=true|false";

[[noreturn]] void Fail(const std::string& message) {
  throw std::invalid_argument(message);
}

std::vector<std::string> Split(const std::string& s, const std::string& seps) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : s) {
    if (seps.find(c) != std::string::npos) {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  parts.push_back(part);
  return parts;
}

// A non-negative integer (digits only, fits 2^62), else an error naming
// `what`.
std::uint64_t ParseCount(const std::string& value, const std::string& what) {
  if (value.empty() ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    Fail(what + ": '" + value + "' is not a non-negative integer");
  }
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
  if (errno != 0 || v > (1ull << 62))
    Fail(what + ": '" + value + "' is too large");
  return v;
}

std::int64_t ParseSigned(const std::string& value, const std::string& what) {
  if (!value.empty() && value[0] == '-') {
    return -static_cast<std::int64_t>(ParseCount(value.substr(1), what));
  }
  return static_cast<std::int64_t>(ParseCount(value, what));
}

float ParseFloat(const std::string& value, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || errno != 0 ||
      !std::isfinite(v)) {
    Fail(what + ": '" + value + "' is not a finite number");
  }
  return v;
}

bool ParseBool(const std::string& value, const std::string& what) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  Fail(what + ": '" + value + "' is not true or false");
}

Shape4 ParseShape(const std::string& value) {
  const std::vector<std::string> parts = Split(value, ",x");
  if (parts.size() != 4) {
    Fail("--shape: '" + value +
         "' is not B,H,Q,K (batch, heads, q_len, k_len: four positive "
         "integers)");
  }
  std::uint64_t v[4];
  const char* names[4] = {"batch", "heads", "q_len", "k_len"};
  for (int i = 0; i < 4; ++i) {
    v[i] = ParseCount(parts[i], std::string("--shape ") + names[i]);
    if (v[i] == 0) Fail(std::string("--shape: ") + names[i] + " is 0");
  }
  const double elements = static_cast<double>(v[0]) * v[1] * v[2] * v[3];
  if (elements > static_cast<double>(1ull << 31)) {
    Fail("--shape: " + value + " has more than 2^31 elements");
  }
  return {.batch = v[0], .heads = v[1], .q_len = v[2], .k_len = v[3]};
}

void ParseMask(const std::string& value, Problem& p) {
  std::set<std::string> seen;
  bool kind_set = false;
  for (const std::string& item : Split(value, ",")) {
    if (item.empty()) Fail("--mask: empty rule in '" + value + "'");
    const std::size_t eq = item.find('=');
    const std::string rule = item.substr(0, eq);
    const std::string arg = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool has_arg = eq != std::string::npos;
    const std::string what = "--mask " + rule;
    if (!seen.insert(rule).second) Fail("--mask: '" + rule + "' given twice");
    const auto no_arg = [&] {
      if (has_arg) Fail(what + " takes no value (got '" + arg + "')");
    };
    const auto need_arg = [&] {
      if (!has_arg || arg.empty())
        Fail(what + " needs a value (" + rule + "=...)");
    };
    const auto set_kind = [&](MaskKind kind) {
      if (kind_set) {
        Fail("--mask: more than one of none, causal, sliding, decode in '" +
             value + "'");
      }
      kind_set = true;
      p.kind = kind;
    };
    if (rule == "none") {
      no_arg();
      set_kind(MaskKind::kNone);
    } else if (rule == "causal") {
      no_arg();
      set_kind(MaskKind::kCausal);
    } else if (rule == "sliding") {
      need_arg();
      set_kind(MaskKind::kSlidingWindow);
      p.window = ParseCount(arg, what);
    } else if (rule == "decode") {
      need_arg();
      set_kind(MaskKind::kDecode);
      const std::vector<std::string> parts = Split(arg, ":");
      if (parts.size() > 2) Fail(what + ": '" + arg + "' is not PAST[:WINDOW]");
      p.past = ParseCount(parts[0], what + " PAST");
      if (parts.size() == 2) p.window = ParseCount(parts[1], what + " WINDOW");
    } else if (rule == "keep") {
      need_arg();
      if (p.dense != DenseKind::kNone) Fail("--mask: keep and bias together");
      if (arg == "f32") {
        p.dense = DenseKind::kKeepF32;
      } else if (arg == "u8") {
        p.dense = DenseKind::kKeepU8;
      } else if (arg == "bits") {
        p.dense = DenseKind::kKeepBits;
      } else {
        Fail(what + ": '" + arg + "' is not f32, u8 or bits");
      }
    } else if (rule == "bias") {
      no_arg();
      if (p.dense != DenseKind::kNone) Fail("--mask: keep and bias together");
      p.dense = DenseKind::kBias;
    } else if (rule == "window_keys") {
      need_arg();
      p.window_keys = ParseCount(arg, what);
    } else if (rule == "chunk") {
      need_arg();
      p.chunk = ParseCount(arg, what);
    } else if (rule == "sink_keys") {
      need_arg();
      p.sink_keys = ParseCount(arg, what);
    } else if (rule == "prefix") {
      need_arg();
      p.prefix = static_cast<std::int64_t>(ParseCount(arg, what));
    } else if (rule == "query_offset") {
      need_arg();
      p.query_offset = ParseSigned(arg, what);
    } else if (rule == "segments") {
      need_arg();
      p.segments = ParseCount(arg, what);
      if (p.segments == 0) Fail(what + " is 0 (at least one document)");
    } else if (rule == "paged") {
      need_arg();
      p.paged_block = ParseCount(arg, what);
      if (p.paged_block == 0) Fail(what + " is 0 (slots per block)");
    } else if (rule == "valid") {
      need_arg();
      p.valid = ParseCount(arg, what);
      if (p.valid == 0) Fail(what + " is 0");
    } else {
      Fail("--mask: unknown rule '" + rule + "' (known: " + kMaskRules + ")");
    }
  }
  if (p.valid != 0 && p.paged_block == 0) {
    Fail("--mask: valid=N needs paged=BLOCK");
  }
}

void ParseSoftmax(const std::string& value, Problem& p) {
  std::set<std::string> seen;
  for (const std::string& item : Split(value, ",")) {
    if (item.empty()) Fail("--softmax: empty option in '" + value + "'");
    const std::size_t eq = item.find('=');
    const std::string opt = item.substr(0, eq);
    const std::string arg = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool has_arg = eq != std::string::npos;
    const std::string what = "--softmax " + opt;
    if (!seen.insert(opt).second) Fail("--softmax: '" + opt + "' given twice");
    if ((opt == "scale" || opt == "softcap" || opt == "sink_logits" ||
         opt == "zero_masked") &&
        !has_arg) {
      Fail(what + " needs a value (" + opt + "=...)");
    }
    if (opt == "scale") {
      p.scale = ParseFloat(arg, what);
    } else if (opt == "softcap") {
      p.softcap = ParseFloat(arg, what);
      if (p.softcap < 0) Fail(what + " is negative");
    } else if (opt == "sink_logits") {
      p.has_sink_logits = true;
      p.sink_logit = ParseFloat(arg, what);
    } else if (opt == "alibi") {
      p.has_alibi = true;
      if (has_arg) p.alibi_max_bias = ParseFloat(arg, what);
    } else if (opt == "lse") {
      if (has_arg) Fail(what + " takes no value");
      p.lse = true;
    } else if (opt == "zero_masked") {
      p.zero_masked = ParseBool(arg, what);
    } else {
      Fail("--softmax: unknown option '" + opt +
           "' (known: " + kSoftmaxOptions + ")");
    }
  }
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

// Splits "--flag=value" or "--flag" "value" pairs into (flag, value).
std::vector<std::pair<std::string, std::string>> Pairs(
    const std::vector<std::string>& flags) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    if (f.rfind("--", 0) != 0) {
      Fail("'" + f +
           "' is not a flag (--shape, --dtype, --mask, --softmax, "
           "--name)");
    }
    const std::size_t eq = f.find('=');
    if (eq != std::string::npos) {
      out.emplace_back(f.substr(0, eq), f.substr(eq + 1));
    } else if (i + 1 < flags.size() && flags[i + 1].rfind("--", 0) != 0) {
      out.emplace_back(f, flags[i + 1]);
      ++i;
    } else {
      Fail(f + " needs a value");
    }
  }
  return out;
}

}  // namespace

Problem ParseProblem(const std::vector<std::string>& flags,
                     const std::string& default_name) {
  Problem p;
  p.name = default_name;
  bool has_shape = false;
  std::set<std::string> seen;
  std::string dtype = "f32", mask = "none", softmax;
  for (const auto& [flag, value] : Pairs(flags)) {
    if (!seen.insert(flag).second) {
      Fail(flag + " given twice (one problem per line or command line)");
    }
    if (flag == "--shape") {
      p.shape = ParseShape(value);
      has_shape = true;
    } else if (flag == "--dtype") {
      dtype = value;
      if (value == "f32") {
        p.type = ScoreType::kF32;
      } else if (value == "bf16") {
        p.type = ScoreType::kBF16;
      } else if (value == "f16") {
        p.type = ScoreType::kF16;
      } else {
        Fail("--dtype: '" + value + "' is not f32, bf16 or f16");
      }
    } else if (flag == "--mask") {
      mask = value;
      ParseMask(value, p);
    } else if (flag == "--softmax") {
      softmax = value;
      ParseSoftmax(value, p);
    } else if (flag == "--name") {
      if (value.empty() || value.size() > 32)
        Fail("--name: 1 to 32 characters");
      for (char c : value) {
        if (!IsNameChar(c)) {
          Fail("--name: '" + value +
               "' has a character other than letters, digits, _ - .");
        }
      }
      p.name = value;
    } else {
      Fail("unknown flag " + flag +
           " (a problem takes --shape, --dtype, --mask, --softmax, --name)");
    }
  }
  if (!has_shape) Fail("a problem needs --shape=B,H,Q,K");
  const Shape4& s = p.shape;
  if (p.kind == MaskKind::kDecode) {
    if (s.q_len != 1) {
      Fail("--mask decode: q_len is " + std::to_string(s.q_len) +
           ", decode needs 1 (--shape=B,H,1,K)");
    }
    if (p.past > s.k_len - 1) {
      Fail("--mask decode: PAST " + std::to_string(p.past) +
           " is above upper = k_len - 1 = " + std::to_string(s.k_len - 1));
    }
  }
  if (p.paged_block != 0) {
    if (p.valid == 0) p.valid = s.k_len;
    if (p.valid > s.k_len) {
      Fail("--mask valid=" + std::to_string(p.valid) + " is above k_len " +
           std::to_string(s.k_len));
    }
    if (p.valid < s.q_len) {
      Fail("--mask valid=" + std::to_string(p.valid) +
           " is below q_len (the queries are the newest valid positions)");
    }
    if (p.kind == MaskKind::kDecode) {
      Fail("--mask paged: use causal, not decode (decode fixes its layout)");
    }
  }
  p.descriptor = "--shape=" + std::to_string(s.batch) + "," +
                 std::to_string(s.heads) + "," + std::to_string(s.q_len) + "," +
                 std::to_string(s.k_len) + " --dtype=" + dtype +
                 " --mask=" + mask;
  if (!softmax.empty()) p.descriptor += " --softmax=" + softmax;
  return p;
}

std::vector<Problem> ParseProblemLines(const std::string& text,
                                       std::size_t first_index) {
  std::vector<Problem> problems;
  std::istringstream in(text);
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> flags;
    for (std::string w; words >> w;) {
      // Quotes around a value, as on a shell line, are dropped.
      std::string unquoted;
      for (char c : w) {
        if (c != '\'' && c != '"') unquoted += c;
      }
      flags.push_back(unquoted);
    }
    if (flags.empty()) continue;
    try {
      problems.push_back(ParseProblem(
          flags, "X" + std::to_string(first_index + problems.size())));
    } catch (const std::invalid_argument& e) {
      Fail("line " + std::to_string(number) + ": " + e.what());
    }
  }
  return problems;
}

std::vector<Problem> TakeProblemFlags(int* argc, char** argv, bool* standard) {
  static const char* const kProblemFlags[] = {"--shape", "--dtype", "--mask",
                                              "--softmax", "--name"};
  std::vector<std::string> flags;
  std::string file;
  *standard = false;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    const std::string flag = arg.substr(0, arg.find('='));
    bool ours = false;
    for (const char* f : kProblemFlags) ours = ours || flag == f;
    if (ours) {
      flags.push_back(arg);
      // "--shape 1,2,3,4": the value is the next argument.
      if (arg.find('=') == std::string::npos && i + 1 < *argc) {
        flags.push_back(argv[++i]);
      }
    } else if (flag == "--problems") {
      if (arg.find('=') != std::string::npos) {
        file = arg.substr(arg.find('=') + 1);
      } else if (i + 1 < *argc) {
        file = argv[++i];
      }
      if (file.empty()) Fail("--problems needs a file name");
    } else if (arg == "--standard_workloads") {
      *standard = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  std::vector<Problem> problems;
  if (!flags.empty()) problems.push_back(ParseProblem(flags, "X1"));
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) Fail("--problems: cannot read '" + file + "'");
    std::stringstream text;
    text << in.rdbuf();
    try {
      for (Problem& p : ParseProblemLines(text.str(), problems.size() + 1)) {
        problems.push_back(std::move(p));
      }
    } catch (const std::invalid_argument& e) {
      Fail("--problems " + file + ", " + e.what());
    }
  }
  std::set<std::string> names;
  for (const Problem& p : problems) {
    if (!names.insert(p.name).second) {
      Fail("two problems are named " + p.name + " (--name)");
    }
  }
  return problems;
}

}  // namespace rlx::bench
