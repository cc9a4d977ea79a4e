// exec's sequence mode with explicit state (--carry) and per-call inputs from an .npz, end to
// end through the built binary, on a coremltools recurrence whose state is an input/output pair
// (tests/data/exec/carry/gen_carry.py): N calls with the state carried equal numpy's ONE pass
// over the whole sequence; without the carry they do not (so the test can fail). Broken or
// unsupported archives are exit 2 naming the archive and the member.
#include "shardgate/io.h"
#include "shardgate/metrics.h"
#include "shardgate/npy.h"
#include "shardgate/npz.h"
#include "support/cli_run.h"
#include "support/golden_cli_fixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace sg {
namespace {

const std::string kCarry = SG_TEST_DATA_DIR "/exec/carry/";
const std::string kShard = kCarry + "recurrence.mlpackage";

class ExecSequenceCli : public testing::GoldenCliFixture {
 protected:
  ExecSequenceCli() : GoldenCliFixture("sg_exec_seq_") {}

  std::vector<double> load(const std::string& path) {
    auto t = read_npy(path);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return t.is_ok() ? *to_double_vector(*t) : std::vector<double>{};
  }

  // The y outputs of calls 0..2 under `dir`, concatenated along the sequence axis ([1, 4, 8]
  // each, so plain concatenation in call order).
  std::vector<double> joined_y(const std::string& dir) {
    std::vector<double> all;
    for (int k = 0; k < 3; ++k) {
      const auto y = load(out(dir) + "/call_00" + std::to_string(k) + "/y.npy");
      all.insert(all.end(), y.begin(), y.end());
    }
    return all;
  }

  double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
  }

  // A copy of calls.npz with `edit` applied to its bytes.
  std::string edited_npz(const std::string& name, const std::function<void(std::string&)>& edit,
                         const std::string& source = "calls.npz") {
    auto bytes = read_file(kCarry + source);
    EXPECT_TRUE(bytes.is_ok());
    std::string b = *bytes;
    edit(b);
    std::ofstream(out(name), std::ios::binary) << b;
    return out(name);
  }
};

TEST_F(ExecSequenceCli, ChunkedCallsWithTheStateCarriedEqualOnePass) {
  const CliRun r =
      run_golden_validator("exec " + kShard + " --input x=" + kCarry +
                           "x.npy --chunk x:1:4 --carry h_out=h --out " + out("carry"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("call 2 (x[8:12] along axis 1) of 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("output 'h_out' of call 1"), std::string::npos) << r.output;
  const auto one_pass = load(kCarry + "y_one_pass.npy");
  EXPECT_LT(max_diff(joined_y("carry"), one_pass), 1e-5);
  EXPECT_LT(max_diff(load(out("carry") + "/call_002/h_out.npy"), load(kCarry + "h_final.npy")), 1e-5);
  // Call 0 started from zeros, and the inputs/ directory holds what each call was fed.
  EXPECT_EQ(load(out("carry") + "/call_000/inputs/h.npy"), std::vector<double>(8, 0.0));
  EXPECT_EQ(load(out("carry") + "/call_001/inputs/h.npy"), load(out("carry") + "/call_000/h_out.npy"));
}

// The planted defect, from the outside: the same calls without --carry start every call from a
// zero state and no longer equal the one pass.
TEST_F(ExecSequenceCli, WithoutTheCarryTheCallsDoNotEqualOnePass) {
  ASSERT_TRUE(write_npy(out("h0.npy"), *Tensor::zeros(DType::kF32, {1, 8})).is_ok());
  const CliRun r = run_golden_validator("exec " + kShard + " --input x=" + kCarry +
                                        "x.npy --input h=" + out("h0.npy") +
                                        " --chunk x:1:4 --out " + out("nocarry"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_GT(max_diff(joined_y("nocarry"), load(kCarry + "y_one_pass.npy")), 0.1);
}

TEST_F(ExecSequenceCli, NpzCallsStoredOrDeflateEqualOnePass) {
  for (const char* npz : {"calls.npz", "calls_deflate.npz"}) {
    const std::string dir = std::string("npz_") + npz;
    const CliRun r = run_golden_validator("exec " + kShard + " --calls " + kCarry + npz +
                                          " --carry h_out=h --out " + out(dir));
    ASSERT_EQ(r.code, 0) << npz << r.output;
    EXPECT_NE(r.output.find(std::string(npz) + "[2]) of 3"), std::string::npos) << r.output;
    EXPECT_LT(max_diff(joined_y(dir), load(kCarry + "y_one_pass.npy")), 1e-5) << npz;
  }
}

TEST_F(ExecSequenceCli, NpzReaderMatchesNumpysMembers) {
  auto stored = read_npz(kCarry + "calls.npz");
  auto deflate = read_npz(kCarry + "calls_deflate.npz");
  ASSERT_TRUE(stored.is_ok()) << stored.status().to_string();
  ASSERT_TRUE(deflate.is_ok()) << deflate.status().to_string();
  ASSERT_EQ(stored->size(), 1u);
  const Tensor& x = stored->at("x");
  EXPECT_EQ(x.shape(), (Shape{3, 1, 4, 8}));
  EXPECT_EQ(*to_double_vector(x), *to_double_vector(deflate->at("x")));
  // Chunk k of the archive is x[:, 4k:4k+4, :] of the whole sequence.
  const auto whole = *to_double_vector(*read_npy(kCarry + "x.npy"));
  const auto chunks = *to_double_vector(x);
  for (size_t k = 0; k < 3; ++k) {
    for (size_t i = 0; i < 32; ++i) ASSERT_EQ(chunks[k * 32 + i], whole[k * 32 + i]);
  }
}

TEST_F(ExecSequenceCli, BrokenOrUnsupportedArchivesAreExit2NamingTheMember) {
  auto find = [](const std::string& b, const std::string& what, size_t from = 0) {
    const size_t at = b.find(what, from);
    EXPECT_NE(at, std::string::npos) << what;
    return at;
  };
  struct Case {
    std::string file, needle;
  };
  std::vector<Case> cases;
  // Compression method 12 (bzip2) in the local and central headers.
  cases.push_back({edited_npz("bzip2.npz", [&](std::string& b) {
                     for (const char* sig : {"PK\x03\x04", "PK\x01\x02"}) {
                       const size_t at = find(b, sig);
                       b[at + (sig[2] == 3 ? 8 : 10)] = 12;
                     }
                   }),
                   "member 'x.npy' uses zip compression method 12"});
  // A flipped data byte: the CRC-32 no longer matches.
  cases.push_back({edited_npz("crc.npz", [&](std::string& b) { b[200] = static_cast<char>(b[200] ^ 0x5a); }),
                   "member 'x.npy': CRC-32"});
  // A member that is not an .npy array (the name in both headers).
  cases.push_back({edited_npz("txt.npz", [&](std::string& b) {
                     size_t at = find(b, "x.npy");
                     b.replace(at, 5, "x.txt");
                     at = find(b, "x.npy", at);
                     b.replace(at, 5, "x.txt");
                   }),
                   "member 'x.txt' is not a .npy array"});
  // A deflate member claiming 2 GiB uncompressed from 481 bytes: refused before allocating.
  cases.push_back({edited_npz("huge.npz", [&](std::string& b) {
                     const size_t at = find(b, "PK\x01\x02") + 24;
                     b.replace(at, 4, std::string("\xff\xff\xff\x7f", 4));
                   }, "calls_deflate.npz"),
                   "more than deflate can expand"});
  // Truncated: no end-of-central-directory record.
  cases.push_back({edited_npz("short.npz", [](std::string& b) { b.resize(300); }),
                   "no zip end-of-central-directory record"});
  // Encrypted flag set in the central directory.
  cases.push_back({edited_npz("enc.npz", [&](std::string& b) { b[find(b, "PK\x01\x02") + 8] |= 1; }),
                   "member 'x.npy' is encrypted"});
  for (const Case& c : cases) {
    const CliRun r =
        run_golden_validator("exec " + kShard + " --calls " + c.file + " --carry h_out=h");
    EXPECT_EQ(r.code, 2) << c.file << "\n" << r.output;
    EXPECT_NE(r.output.find(c.file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.needle << "\n" << r.output;
  }
  const CliRun given_twice = run_golden_validator("exec " + kShard + " --calls " + kCarry +
                                                  "calls.npz --input x=" + kCarry + "x.npy");
  EXPECT_EQ(given_twice.code, 2) << given_twice.output;
  EXPECT_NE(given_twice.output.find("input 'x' is given with --input and also as member 'x.npy'"),
            std::string::npos)
      << given_twice.output;
}

// probe's sequence mode: a candidate build (decay 0.70) against its baseline (0.75) over 3 calls,
// each carrying its own state: every row's cosine equals numpy's (probe_cosines.json); without
// the carry the later calls' cosines are numpy's no-carry values instead (the state matters).
TEST_F(ExecSequenceCli, ProbeOverCallsCarriesEachBuildsOwnState) {
  std::ifstream in(kCarry + "probe_cosines.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const std::string base = " --baseline " + kShard + " --no-color --gate " SG_SOURCE_DIR "/gates/fidelity.json";
  for (const bool carry : {true, false}) {
    const std::string json = carry ? "carry.json" : "nocarry.json";
    ASSERT_TRUE(write_npy(out("h0.npy"), *Tensor::zeros(DType::kF32, {1, 8})).is_ok());
    const CliRun r = run_golden_validator(
        "probe " + kCarry + "recurrence_a070.mlpackage" + base + " --input x=" + kCarry +
        "x.npy --chunk x:1:4 " + (carry ? "--carry h_out=h" : "--input h=" + out("h0.npy")) +
        " --json " + out(json));
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
    const nlohmann::json j = report(json);
    const nlohmann::json& want = expected[carry ? "carry" : "no_carry"];
    size_t seen = 0;
    for (const auto& c : j["checks"]) {
      std::string call;
      for (const auto& l : c["labels"]) {
        if (l["key"] == "call") call = l["value"].get<std::string>();
      }
      ASSERT_EQ(call.rfind("call_00", 0), 0u) << c.dump();
      const int k = call.back() - '0';
      for (const auto& row : c["rows"]) {
        const double got = row["values"]["cosine"].get<double>();
        const double oracle = c["checkpoint"] == "y" ? want[k]["y"][row["position"].get<int>()].get<double>()
                                                     : want[k]["h_out"].get<double>();
        EXPECT_NEAR(got, oracle, 1e-5) << json << " " << c["id"] << " position " << row["position"];
        ++seen;
      }
    }
    EXPECT_EQ(seen, 3u * (4u + 1u)) << json;  // per call: y per position, h_out whole
  }
}

}  // namespace
}  // namespace sg
