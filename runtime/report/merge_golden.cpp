// merge_golden_reports (golden_report.h): the slices of a `run --teacher-forced` fan-out back
// into the run of one job. Every list of the run is put back in the order a single job makes
// it (run_chain_fidelity, chain_fidelity.cpp): shards and feeds in step order, checks in
// checkpoint order (subnormals=keep before flush), notes as that function writes them.
#include "report/merge_slices.h"
#include "shardgate/golden_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace sg {
namespace {

size_t position_in(const std::vector<std::string>& list, const std::string& item) {
  return static_cast<size_t>(std::find(list.begin(), list.end(), item) - list.begin());
}

std::string label_of(const CheckIdentity& id, const std::string& key) {
  for (const auto& [k, v] : id.labels) {
    if (k == key) return v;
  }
  return "";
}

std::string inputs_text(const FidelityRun& run) {
  std::string out;
  for (const ReportInput& in : run.inputs) {
    out += fmt::format("{}{} {} (sha256 {})", out.empty() ? "" : ", ", in.role, in.path, in.sha256);
  }
  return out;
}

std::string views_text(const FidelityRun& run) {
  std::string out;
  for (const ReportView& v : run.views) out += (out.empty() ? "" : ", ") + v.mode;
  return out;
}

// Where a note goes in a single job's list (chain_fidelity.cpp writes them in this order; the
// flush run of --subnormals both repeats them prefixed, then one closing note follows).
struct NoteKey {
  int block = 0;     // 0 kept (or the only) storage view, 1 "[subnormals flush] ", 2 after both
  int kind = 0;      // 0 chain, 1 whole-tensor cosine, 2 teacher-forced feed, 3 first
                     // non-finite, 4 peak memory, 5 anything else
  size_t order = 0;  // checkpoint or step position
  auto tuple() const { return std::tie(block, kind, order); }
};

constexpr std::string_view kFlushPrefix = "[subnormals flush] ";

// How a slice executed its shards, as its chain notes record it ("chain 'x': 21 steps,
// precision fp16", once more after "[subnormals flush] " under --subnormals both). Slices run at
// another precision (fp32, the lenient reference mode) or storage view measured other numerics:
// merged, a fp32 slice's pass read as a fp16 run's.
std::string execution_text(const FidelityRun& run) {
  std::string out;
  for (const std::string& note : run.notes) {
    std::string_view text = note;
    if (text.rfind(kFlushPrefix, 0) == 0) text.remove_prefix(kFlushPrefix.size());
    if (text.rfind("chain '", 0) == 0) out += (out.empty() ? "" : "; ") + note;
  }
  return out;
}

std::string quoted_after(const std::string& text, std::string_view lead) {
  const size_t start = lead.size();
  const size_t end = text.find('\'', start);
  return end == std::string::npos ? "" : text.substr(start, end - start);
}

NoteKey note_key(const std::string& note, const RunSlice& slice) {
  NoteKey key;
  std::string text = note;
  if (text.rfind(kFlushPrefix, 0) == 0) {
    key.block = 1;
    text = text.substr(kFlushPrefix.size());
  } else if (text.rfind("subnormals both:", 0) == 0) {
    key.block = 2;
    return key;
  }
  if (text.rfind("chain '", 0) == 0) {
    key.kind = 0;
  } else if (size_t at = text.find(": whole-tensor cosine "); at != std::string::npos) {
    key.kind = 1;
    const std::string id = text.substr(0, at);
    key.order = position_in(slice.chain_checkpoints, id.substr(0, id.find('[')));
  } else if (text.rfind("teacher-forced: step '", 0) == 0) {
    key.kind = 2;
    key.order = position_in(slice.chain_steps, quoted_after(text, "teacher-forced: step '"));
  } else if (text.rfind("first non-finite value: step '", 0) == 0) {
    key.kind = 3;
    key.order = position_in(slice.chain_steps, quoted_after(text, "first non-finite value: step '"));
  } else if (text.rfind("peak memory:", 0) == 0) {
    key.kind = 4;
  } else {
    key.kind = 5;
  }
  return key;
}

// The notes of every slice in a single job's order. Per kind: the chain note once, the first
// non-finite value of the earliest step only, peak memory per slice job (a process's peak is
// not the sum of its parts), anything else once.
std::vector<std::string> merge_notes(const SliceReports<GoldenReport>& slices,
                                     const std::vector<size_t>& by_index) {
  const RunSlice& slice = *slices.front().second.run.slice;
  struct Entry {
    NoteKey key;
    size_t seq;
    std::string text;
    int64_t slice_index;
  };
  std::vector<Entry> entries;
  for (size_t s : by_index) {
    const GoldenReport& r = slices[s].second;
    for (const std::string& n : r.run.notes) {
      entries.push_back({note_key(n, slice), entries.size(), n, r.run.slice->index});
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.key.tuple() < b.key.tuple();
  });
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::map<int, size_t> peak_at;  // block -> index into out of its peak-memory note
  std::set<int> nonfinite_done;
  for (const Entry& e : entries) {
    if (e.key.kind == 3) {
      if (!nonfinite_done.insert(e.key.block).second) continue;
    } else if (e.key.kind == 4) {
      constexpr std::string_view kPeak = "peak memory: ";
      const size_t at = e.text.find(kPeak);
      const std::string per_job = fmt::format(
          "slice {}: {}", e.slice_index,
          at == std::string::npos ? e.text : e.text.substr(at + kPeak.size()));
      auto it = peak_at.find(e.key.block);
      if (it == peak_at.end()) {
        peak_at[e.key.block] = out.size();
        out.push_back(e.text.substr(0, at == std::string::npos ? 0 : at) +
                      "peak memory (per CI slice job; one job's peak is not the sum of these): " +
                      per_job);
      } else {
        out[it->second] += "; " + per_job;
      }
      continue;
    } else if (!seen.insert(e.text).second) {
      continue;  // the chain note and the closing note of --subnormals both, once
    }
    out.push_back(e.text);
  }
  return out;
}

// Where the slices' culprit searches (run --culprits) are, for the merged report's
// culprits_note: merge does not read culprit results, and each slice searched its own first
// failing check, so the note names the slice report holding the search a single job would have
// made (the merged run's first failing check). "" when no slice ran a search.
std::string slice_culprit_searches(const SliceReports<GoldenReport>& slices,
                                   const std::vector<size_t>& by_index, const GoldenReport& merged) {
  bool any = false;
  for (const auto& [file, r] : slices) any = any || !r.saved_culprit_search.empty();
  if (!any) return "";
  const auto& first_failure = merged.evaluation.summary.first_failure_check;
  if (merged.evaluation.summary.verdict != Verdict::kFail || !first_failure) {
    return "no check failed: no culprit search (the slices' own culprit notes are in their reports)";
  }
  const std::string failing = merged.run.checks[*first_failure].identity.id();
  for (size_t s : by_index) {
    const auto& [file, r] = slices[s];
    for (const CheckResult& c : r.run.checks) {
      if (c.identity.id() != failing) continue;
      if (r.saved_culprit_search.empty()) {
        return fmt::format("not merged: the first failing check {} is in slice {} ({}), which ran "
                           "no culprit search", failing, r.run.slice->index, file);
      }
      return fmt::format("not merged (merge does not read culprit results): the first failing "
                         "check {} is in slice {}, whose report {} has the search a single job "
                         "would have made: {}", failing, r.run.slice->index, file,
                         r.saved_culprit_search);
    }
  }
  return fmt::format("not merged (merge does not read culprit results): the first failing check "
                     "{} is in no slice's checks", failing);
}

// Everything that makes two slice reports parts of one run.
Status same_run(const std::string& file_a, const GoldenReport& a, const std::string& file_b,
                const GoldenReport& b) {
  auto differ = [&](const char* what, const std::string& x, const std::string& y) -> Status {
    SG_CHECK(x == y, ErrorCode::kUsage,
             "merge: {} and {} are not slices of one run: {} differ ({} vs {})", file_a, file_b,
             what, x.empty() ? "none" : x, y.empty() ? "none" : y);
    return Status::ok();
  };
  SG_TRY(differ("the inputs (chain, golden dump, gate)", inputs_text(a.run), inputs_text(b.run)));
  SG_TRY(differ("the chain steps", fmt::format("{}", fmt::join(a.run.slice->chain_steps, ",")),
                fmt::format("{}", fmt::join(b.run.slice->chain_steps, ","))));
  SG_TRY(differ("the checkpoints", fmt::format("{}", fmt::join(a.run.slice->chain_checkpoints, ",")),
                fmt::format("{}", fmt::join(b.run.slice->chain_checkpoints, ","))));
  SG_TRY(differ("the group counts", std::to_string(a.run.slice->groups_total),
                std::to_string(b.run.slice->groups_total)));
  SG_TRY(differ("the views", views_text(a.run), views_text(b.run)));
  SG_TRY(differ("the precisions", execution_text(a.run), execution_text(b.run)));
  SG_TRY(differ("the policies", a.policy.source + " " + gate_policy_json(a.policy),
                b.policy.source + " " + gate_policy_json(b.policy)));
  SG_TRY(differ("the options (--topk, --strict)",
                fmt::format("topk {} strict {}", a.run.options.topk, a.strict),
                fmt::format("topk {} strict {}", b.run.options.topk, b.strict)));
  SG_TRY(differ("the tool versions", a.tool_version, b.tool_version));
  return Status::ok();
}

}  // namespace

Result<GoldenReport> merge_golden_reports(const SliceReports<GoldenReport>& slices) {
  for (const auto& [file, r] : slices) {
    SG_CHECK(r.run.command == "run" && r.run.slice.has_value(), ErrorCode::kUsage,
             "merge: {}: not a slice of `golden-validator run --teacher-forced` (the report "
             "of `{}` records no slice; free-running runs are not split)",
             file, r.run.command);
  }
  std::vector<merge_util::SliceId> ids;
  for (const auto& [file, r] : slices) ids.push_back({file, r.run.slice->index, r.run.slice->count});
  SG_TRY(merge_util::check_slice_cover(ids));
  const auto& [first_file, first] = slices.front();
  for (const auto& [file, r] : slices) SG_TRY(same_run(first_file, first, file, r));

  // Slices in index order, and every group once.
  std::vector<size_t> by_index(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    by_index[static_cast<size_t>(slices[i].second.run.slice->index)] = i;
  }
  RunSlice merged_slice = *first.run.slice;
  merged_slice.index = 0;
  merged_slice.count = 1;
  merged_slice.groups.clear();
  std::map<int64_t, std::string> group_file;
  for (size_t s : by_index) {
    const auto& [file, r] = slices[s];
    for (const SliceGroup& g : r.run.slice->groups) {
      auto [it, fresh] = group_file.emplace(g.index, file);
      SG_CHECK(fresh, ErrorCode::kUsage, "merge: overlapping slices: {} and {} both ran step group {}",
               it->second, file, g.index);
      merged_slice.groups.push_back(g);
    }
  }
  SG_CHECK(static_cast<int64_t>(group_file.size()) == merged_slice.groups_total, ErrorCode::kUsage,
           "merge: the slices ran {} of the chain's {} teacher-forced step groups ({})",
           group_file.size(), merged_slice.groups_total, merge_util::files_text(ids));
  std::sort(merged_slice.groups.begin(), merged_slice.groups.end(),
            [](const SliceGroup& a, const SliceGroup& b) { return a.index < b.index; });

  FidelityRun run;
  run.command = first.run.command;
  run.inputs = first.run.inputs;
  run.options = first.run.options;
  for (const ReportView& v : first.run.views) run.views.push_back({v.mode, v.answers, {}});
  const std::vector<std::string>& steps = merged_slice.chain_steps;
  const std::vector<std::string>& checkpoints = merged_slice.chain_checkpoints;
  for (size_t s : by_index) {
    const FidelityRun& part = slices[s].second.run;
    run.shards.insert(run.shards.end(), part.shards.begin(), part.shards.end());
    for (size_t v = 0; v < part.views.size(); ++v) {
      run.views[v].feeds.insert(run.views[v].feeds.end(), part.views[v].feeds.begin(),
                                part.views[v].feeds.end());
    }
    run.checks.insert(run.checks.end(), part.checks.begin(), part.checks.end());
    for (const std::string& r : part.reference_only) {
      if (std::find(run.reference_only.begin(), run.reference_only.end(), r) == run.reference_only.end()) {
        run.reference_only.push_back(r);
      }
    }
    for (const std::string& c : part.candidate_only) {
      if (std::find(run.candidate_only.begin(), run.candidate_only.end(), c) == run.candidate_only.end()) {
        run.candidate_only.push_back(c);
      }
    }
  }
  std::stable_sort(run.shards.begin(), run.shards.end(), [&](const ReportShard& a, const ReportShard& b) {
    return position_in(steps, a.id) < position_in(steps, b.id);
  });
  for (ReportView& v : run.views) {
    std::stable_sort(v.feeds.begin(), v.feeds.end(), [&](const StepFeed& a, const StepFeed& b) {
      return position_in(steps, a.step) < position_in(steps, b.step);
    });
  }
  auto check_key = [&](const CheckResult& c) {
    return std::make_pair(label_of(c.identity, "subnormals") == "flush" ? 1 : 0,
                          position_in(checkpoints, c.identity.checkpoint));
  };
  std::stable_sort(run.checks.begin(), run.checks.end(),
                   [&](const CheckResult& a, const CheckResult& b) { return check_key(a) < check_key(b); });
  run.notes = merge_notes(slices, by_index);
  run.slice = std::move(merged_slice);
  SG_ASSIGN_OR_RETURN(GoldenReport merged,
                      make_golden_report(std::move(run), first.policy, first.strict, first.tool_version));
  merged.culprits_note = slice_culprit_searches(slices, by_index, merged);
  return merged;
}

}  // namespace sg
