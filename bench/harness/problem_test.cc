// SPDX-License-Identifier: MIT OR Apache-2.0
// rlx_attn_bench's problems of the user's own (bench/harness/problem.h): the
// examples of docs/BENCHMARKING.md parse, build and pass the library's
// checks; bad input is rejected with a message that names what is wrong;
// a problem that describes a standard workload keeps what it keeps; and
// the clock's plausibility rules (bench/harness/clock.h).
#include "bench/harness/problem.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "bench/harness/clock.h"
#include "bench/harness/workloads.h"

namespace rlx::bench {
namespace {

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::string w;
  for (char c : line + " ") {
    if (c == ' ') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else if (c != '\'') {
      w += c;
    }
  }
  return words;
}

// The examples of docs/BENCHMARKING.md, "Your own shapes".
const char* const kExamples[] = {
    "--shape 1,64,1,8192 --dtype bf16 "
    "--mask 'causal,window_keys=4096,sink_keys=4'",
    "--shape=1,32,1,4097 --mask=decode=2100 --name=D2",
    "--shape=1,32,1,4097 --mask=decode=2100:512 --name=D2w",
    "--shape=1,8,512,512 --mask=causal --softmax=scale=0.125,softcap=50",
    "--shape=1,32,1,16385 --mask=decode=12000,chunk=8192",
    "--shape=1,8,2048,2048 --mask=causal,segments=4",
    "--shape=1,32,1,4096 --mask=causal,paged=16,valid=3000 --name=PG",
    "--shape=1,8,1024,1024 --mask=causal,prefix=256",
    "--shape=4,8,256,2048 --mask=keep=f32",
    "--shape=4,8,256,2048 --mask=keep=u8",
    "--shape=2,8,1,4100 --mask=causal,keep=bits",
    "--shape=1,8,512,512 --mask=bias",
    "--shape=1,8,64,4096 --mask=causal --softmax=alibi=8,lse",
    "--shape=1,64,1,8192 --dtype=f16 --mask=sliding=1023 "
    "--softmax=sink_logits=0.5,zero_masked=false",
    "--shape=2x4x16x300 --mask=causal,query_offset=100,window_keys=64",
};

TEST(ProblemTest, ExamplesParseAndBuild) {
  std::vector<Problem> problems;
  for (const char* example : kExamples) {
    SCOPED_TRACE(example);
    problems.push_back(ParseProblem(Words(example), "X1"));
  }
  SetCustomWorkloads(problems);
  for (const Workload& w : CustomWorkloads()) {
    SCOPED_TRACE(w.problem->descriptor);
    EXPECT_NO_THROW(CheckProblem(w));
    EXPECT_GT(Data(w).kept, 0u);
  }
}

TEST(ProblemTest, TheDocumentedProblem) {
  const Problem p = ParseProblem(Words(kExamples[0]), "X1");
  EXPECT_EQ(p.name, "X1");
  EXPECT_EQ(p.shape.heads, 64u);
  EXPECT_EQ(p.shape.k_len, 8192u);
  EXPECT_EQ(p.type, ScoreType::kBF16);
  EXPECT_EQ(p.kind, MaskKind::kCausal);
  EXPECT_EQ(p.window_keys, 4096u);
  EXPECT_EQ(p.sink_keys, 4u);
  SetCustomWorkloads({p});
  // Each row keeps the window's 4096 keys and the 4 sinks.
  EXPECT_EQ(Data(CustomWorkloads()[0]).kept, 64u * (4096 + 4));
}

// A problem that describes a standard workload keeps exactly what the
// workload keeps, on the same scores.
TEST(ProblemTest, SameAsStandardWorkloads) {
  const std::vector<std::pair<std::string, std::string>> same = {
      {"D2", "--shape=1,32,1,4097 --mask=decode=2100"},
      {"D2w", "--shape=1,32,1,4097 --mask=decode=2100:512"},
      {"P1", "--shape=1,8,512,512 --mask=causal"},
      {"P4", "--shape=1,8,512,512 --mask=bias"},
  };
  std::vector<Problem> problems;
  for (const auto& [name, line] : same) {
    problems.push_back(ParseProblem(Words(line + " --name=" + name), "X"));
  }
  SetCustomWorkloads(problems);
  for (std::size_t i = 0; i < same.size(); ++i) {
    const Workload& custom = CustomWorkloads()[i];
    for (const Workload& w : Workloads()) {
      if (w.name != custom.name) continue;
      SCOPED_TRACE(w.name);
      EXPECT_EQ(Data(custom).kept, Data(w).kept);
      EXPECT_EQ(Data(custom).scores, Data(w).scores);
    }
  }
}

void ExpectRejected(const std::string& line, const std::string& says) {
  SCOPED_TRACE(line);
  try {
    const Problem p = ParseProblem(Words(line), "X1");
    SetCustomWorkloads({p});
    CheckProblem(CustomWorkloads()[0]);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos)
        << "message: " << e.what();
  }
}

TEST(ProblemTest, BadInputIsRejectedWithAClearMessage) {
  ExpectRejected("--dtype=bf16", "needs --shape");
  ExpectRejected("--shape=1,2,3", "is not B,H,Q,K");
  ExpectRejected("--shape=1,0,1,8", "heads is 0");
  ExpectRejected("--shape=1,2,1,-8", "not a non-negative integer");
  ExpectRejected("--shape=1,1,1,8 --dtype=fp8",
                 "'fp8' is not f32, bf16 or f16");
  ExpectRejected("--shape=1,1,1,8 --mask=casual", "unknown rule 'casual'");
  ExpectRejected("--shape=1,1,1,8 --mask=causal,causal", "given twice");
  ExpectRejected("--shape=1,1,1,8 --mask=causal,decode=3", "more than one of");
  ExpectRejected("--shape=1,1,2,8 --mask=decode=3", "decode needs 1");
  ExpectRejected("--shape=1,1,1,8 --mask=decode=9", "above upper");
  ExpectRejected("--shape=1,1,1,8 --mask=window_keys", "needs a value");
  ExpectRejected("--shape=1,1,1,8 --mask=keep=f64", "not f32, u8 or bits");
  ExpectRejected("--shape=1,1,1,8 --mask=keep=u8,bias", "keep and bias");
  ExpectRejected("--shape=1,1,1,8 --mask=valid=4", "needs paged");
  ExpectRejected("--shape=1,1,1,8 --softmax=softcap", "needs a value");
  ExpectRejected("--shape=1,1,1,8 --softmax=scale=abc", "not a finite number");
  ExpectRejected("--shape=1,1,1,8 --softmax=temperature=2", "unknown option");
  ExpectRejected("--shape=1,1,1,8 --shape=1,1,1,8", "given twice");
  ExpectRejected("--shape=1,1,1,8 --name=a/b", "--name");
  ExpectRejected("--shape=1,1,1,8 --bogus=1", "unknown flag --bogus");
}

TEST(ProblemTest, FileLines) {
  const std::vector<Problem> problems = ParseProblemLines(
      "# decode steps\n"
      "--shape=1,32,1,4097 --mask=decode=2100   # D2\n"
      "\n"
      "--shape=1,64,1,8192 --dtype=bf16 --mask='causal,window_keys=4096'\n",
      1);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].name, "X1");
  EXPECT_EQ(problems[1].name, "X2");
  EXPECT_EQ(problems[1].window_keys, 4096u);
  try {
    ParseProblemLines("--shape=1,1,1,8\n--shape=1,1,1,8 --mask=nope\n", 1);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos)
        << e.what();
  }
}

TEST(ClockTest, PlausibilityRules) {
  std::string note;
  EXPECT_TRUE(ClockPlausible(3.0, 1.0, &note));
  EXPECT_FALSE(ClockPlausible(40.0, 1.0, &note));
  EXPECT_NE(note.find("outside"), std::string::npos);
  EXPECT_FALSE(ClockPlausible(3.0, 2.0, &note));
  EXPECT_NE(note.find("latency"), std::string::npos);
  EXPECT_DOUBLE_EQ(ModelNameGhz("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"),
                   2.4);
  EXPECT_EQ(ModelNameGhz("AMD EPYC"), 0.0);
}

}  // namespace
}  // namespace rlx::bench
