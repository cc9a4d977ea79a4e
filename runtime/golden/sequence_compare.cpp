// Dumps covering several calls (fidelity.h: sequence_dump_calls, compare_sequences): one dump
// per call in call_NNN/ subdirectories, compared call by call.
#include "shardgate/fidelity.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"

#include <algorithm>
#include <filesystem>

namespace sg {
namespace {

namespace fs = std::filesystem;

// "call_012" -> 12; -1 for any other name.
int64_t call_number(const std::string& name) {
  if (name.size() <= 5 || name.compare(0, 5, "call_") != 0 || name.size() > 5 + 9) return -1;
  int64_t n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

}  // namespace

Result<std::vector<std::string>> sequence_dump_calls(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec) || fs::exists(fs::path(path) / "manifest.json", ec)) {
    return std::vector<std::string>{};
  }
  std::vector<std::pair<int64_t, std::string>> calls;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && call_number(name) >= 0) calls.emplace_back(call_number(name), name);
  }
  SG_CHECK(!ec, ErrorCode::kIO, "{}: cannot list: {}", path, ec.message());
  SG_CHECK(!calls.empty(), ErrorCode::kUsage,
           "{}: neither a golden dump (no manifest.json) nor a sequence of dumps (no call_NNN/ "
           "subdirectory)", path);
  std::sort(calls.begin(), calls.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    SG_CHECK(i == 0 || calls[i].first != calls[i - 1].first, ErrorCode::kUsage,
             "{}: {} and {} are the same call", path, calls[i - 1].second, calls[i].second);
    out.push_back(calls[i].second);
  }
  return out;
}

Result<FidelityRun> compare_sequences(const std::string& candidate, const std::string& reference,
                                      const GoldenOpenOptions& open, const MetricOptions& options) {
  SG_ASSIGN_OR_RETURN(std::vector<std::string> cand_calls, sequence_dump_calls(candidate));
  SG_ASSIGN_OR_RETURN(std::vector<std::string> ref_calls, sequence_dump_calls(reference));
  SG_CHECK(!cand_calls.empty() && !ref_calls.empty(), ErrorCode::kUsage,
           "compare: {} is {} but {} is {}: compare a sequence of calls with a sequence",
           candidate, cand_calls.empty() ? "one dump" : "a sequence of calls", reference,
           ref_calls.empty() ? "one dump" : "a sequence of calls");
  for (const std::string& c : ref_calls) {
    SG_CHECK(std::find(cand_calls.begin(), cand_calls.end(), c) != cand_calls.end(), ErrorCode::kUsage,
             "compare: the reference has {} but the candidate {} has no {}/", c, candidate, c);
  }
  for (const std::string& c : cand_calls) {
    SG_CHECK(std::find(ref_calls.begin(), ref_calls.end(), c) != ref_calls.end(), ErrorCode::kUsage,
             "compare: the candidate has {} but the reference {} has no {}/", c, reference, c);
  }
  FidelityRun out;
  out.command = "compare";
  out.options = options;
  for (const std::string& call : ref_calls) {
    SG_ASSIGN_OR_RETURN(auto cand, open_golden_source((fs::path(candidate) / call).string(), open));
    SG_ASSIGN_OR_RETURN(auto ref, open_golden_source((fs::path(reference) / call).string(), open));
    SG_ASSIGN_OR_RETURN(FidelityRun one, compare_sources(*cand, *ref, options));
    for (CheckResult& c : one.checks) {
      c.identity.labels.emplace_back("call", call);
      out.checks.push_back(std::move(c));
    }
    for (ReportInput& in : one.inputs) out.inputs.push_back(std::move(in));
    for (const std::string& r : one.reference_only) out.reference_only.push_back(call + "/" + r);
    for (const std::string& c : one.candidate_only) out.candidate_only.push_back(call + "/" + c);
    for (const std::string& n : one.notes) out.notes.push_back(call + ": " + n);
  }
  out.notes.push_back(fmt::format("sequence of {} calls ({} .. {}), compared call by call", ref_calls.size(),
                                  ref_calls.front(), ref_calls.back()));
  return out;
}

}  // namespace sg
