// merge_residency_reports (residency_report.h): ane-validator slices back into one report.
#include "report/merge_slices.h"
#include "shardgate/residency_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

namespace sg {
namespace {

// What ane-validator's command line applied to every shard alike, read back from a slice's
// shards (the report has no field of its own for it): the --check specs and a --min-residency
// that replaced the gate file's minimum. Slices run with different ones judged their shards by
// different rules, and the merge would read as one run's verdict. nullopt for a slice with no
// shard that opened (an empty slice): it applied nothing.
std::optional<std::string> command_line_rules(const ResidencyReport& r) {
  for (const ShardCheck& s : r.shards) {
    if (s.error) continue;
    std::string checks;
    for (const ContractCheckResult& c : s.checks) checks += (checks.empty() ? "" : " ") + c.spec;
    const bool given = s.threshold.origin == "--min-residency";
    return fmt::format("--check [{}], {}", checks,
                       given ? fmt::format("--min-residency {}", s.threshold.min_residency_pct)
                             : std::string("no --min-residency"));
  }
  return std::nullopt;
}

}  // namespace

Result<ResidencyReport> merge_residency_reports(const SliceReports<ResidencyReport>& slices) {
  std::vector<merge_util::SliceId> ids;
  for (const auto& [file, r] : slices) ids.push_back({file, r.shard_index, r.shard_count});
  SG_TRY(merge_util::check_slice_cover(ids));
  const auto& [first_file, first] = slices.front();
  SG_CHECK(!first.shard_list_sha256.empty(), ErrorCode::kUsage,
           "merge: {}: the report does not record the shard list it was sliced from "
           "(selection.shard_list_sha256): written by an older ane-validator?",
           first_file);
  // The first slice that checked a shard sets the command-line rules the others must share.
  std::optional<std::string> rules;
  std::string rules_file;
  // Everything that makes two reports parts of one run: the same shard list, gate and options.
  for (const auto& [file, r] : slices) {
    // Init-captures: clang 14 cannot capture structured bindings.
    auto differ = [&first_file = first_file, &file = file](const char* what, const std::string& a,
                                                           const std::string& b) -> Status {
      SG_CHECK(a == b, ErrorCode::kUsage,
               "merge: {} and {} are not slices of one run: {} differs ({} vs {})", first_file,
               file, what, a.empty() ? "none" : a, b.empty() ? "none" : b);
      return Status::ok();
    };
    SG_TRY(differ("the shard list (selection.shard_list_sha256)", first.shard_list_sha256,
                  r.shard_list_sha256));
    SG_TRY(differ("the shard count (selection.shards_total)", std::to_string(first.shards_total),
                  std::to_string(r.shards_total)));
    SG_TRY(differ("the gate file", first.gate_file, r.gate_file));
    SG_TRY(differ("the gate file's sha256", first.gate_file_sha256, r.gate_file_sha256));
    SG_TRY(differ("the tool version", first.tool_version, r.tool_version));
    SG_TRY(differ("--strict", first.strict ? "on" : "off", r.strict ? "on" : "off"));
    SG_TRY(differ("--no-fingerprint", first.fingerprinted ? "off" : "on",
                  r.fingerprinted ? "off" : "on"));
    if (const std::optional<std::string> mine = command_line_rules(r)) {
      if (!rules) {
        rules = mine;
        rules_file = file;
      }
      SG_CHECK(*mine == *rules, ErrorCode::kUsage,
               "merge: {} and {} are not slices of one run: the options (--check, --min-residency) "
               "differ ({} vs {})",
               rules_file, file, *rules, *mine);
    }
  }
  ResidencyReport merged = first;
  merged.shard_index = 0;
  merged.shard_count = 1;
  merged.shards.clear();
  std::map<std::string, std::string> file_of;  // shard path -> report that checked it
  for (const auto& [file, r] : slices) {
    for (const ShardCheck& s : r.shards) {
      auto [it, fresh] = file_of.emplace(s.path, file);
      SG_CHECK(fresh, ErrorCode::kUsage, "merge: overlapping slices: {} and {} both checked {}",
               it->second, file, s.path);
      merged.shards.push_back(s);
    }
  }
  SG_CHECK(static_cast<int64_t>(merged.shards.size()) == first.shards_total, ErrorCode::kUsage,
           "merge: the slices checked {} shards of the {} their run was cut from ({})",
           merged.shards.size(), first.shards_total, merge_util::files_text(ids));
  // ane-validator checks its expanded list in sorted order (expand_shard_paths).
  std::stable_sort(merged.shards.begin(), merged.shards.end(),
                   [](const ShardCheck& a, const ShardCheck& b) { return a.path < b.path; });
  return merged;
}

}  // namespace sg
