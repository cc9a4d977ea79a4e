// The JSON form of golden reports (schema reports/schema/golden-report.schema.json) and its
// reader, which `regate` uses: every per-row metric value is kept so verdicts can be recomputed.
#include "shardgate/golden_report.h"

#include "core/json.h"
#include "report/envelope_json.h"
#include "report/golden_report_read.h"

namespace sg {
namespace {

using OJson = nlohmann::ordered_json;
using json_util::Json;

OJson num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

OJson opt_int(std::optional<int64_t> v) { return v ? OJson(*v) : OJson(nullptr); }
OJson pos(int64_t p) { return p >= 0 ? OJson(p) : OJson(nullptr); }

const char* threshold_op(Metric m) {
  if (m == Metric::kNormRatio) return "in";
  return metric_higher_is_better(m) ? ">=" : "<=";
}

OJson metric_json(const MetricVerdict& mv) {
  OJson j;
  j["metric"] = metric_name(mv.metric);
  j["statistic"] = mv.statistic;
  j["value"] = mv.value ? num(*mv.value) : OJson(nullptr);
  if (mv.metric == Metric::kNormRatio) {
    j["value_upper"] = mv.value_upper ? num(*mv.value_upper) : OJson(nullptr);
  }
  if (mv.threshold && mv.threshold->bound) {
    j["threshold"] = mv.metric == Metric::kNormRatio
                         ? OJson::array({num(*mv.threshold->bound),
                                         num(mv.threshold->upper.value_or(INFINITY))})
                         : num(*mv.threshold->bound);
    j["op"] = threshold_op(mv.metric);
    j["origin"] = mv.threshold->origin;
    j["reason"] = mv.threshold->reason;
  } else {
    j["threshold"] = nullptr;
  }
  j["verdict"] = verdict_name(mv.verdict);
  j["worst_position"] = pos(mv.worst_position);
  return j;
}

OJson check_json(const CheckResult& c, const CheckVerdict& v) {
  OJson j;
  j["id"] = c.identity.id();
  j["checkpoint"] = c.identity.checkpoint;
  j["kind"] = c.identity.kind;
  j["layer"] = opt_int(c.identity.layer);
  j["shard"] = c.identity.shard;
  OJson labels = OJson::array();
  for (const auto& [k, val] : c.identity.labels) labels.push_back({{"key", k}, {"value", val}});
  j["labels"] = labels;
  j["shape"] = c.shape;
  j["candidate_dtype"] = c.candidate_dtype;
  j["reference_dtype"] = c.reference_dtype;
  j["position_axis"] = pos(c.position_axis);
  j["row_axis"] = c.row_axis;
  j["statistic"] = v.percentile == 0 ? std::string("min") : fmt::format("p{}", v.percentile);
  j["verdict"] = verdict_name(v.verdict);
  j["message"] = v.message;
  j["first_failing_position"] = pos(v.first_failing_position);
  j["unstable_rows"] = v.unstable_rows;
  j["unstable_note"] = v.unstable_note;
  j["excluded"] = c.excluded.empty() ? OJson(nullptr) : OJson(c.excluded);
  if (c.nonfinite) {
    j["nonfinite"] = {{"tensor", c.nonfinite->tensor},
                      {"flat_index", c.nonfinite->flat_index},
                      {"position", pos(c.nonfinite->position)},
                      {"value", num(c.nonfinite->value)}};
  } else {
    j["nonfinite"] = nullptr;
  }
  OJson metrics = OJson::array();
  for (const MetricVerdict& mv : v.metrics) metrics.push_back(metric_json(mv));
  j["metrics"] = metrics;
  OJson rows = OJson::array();
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const RowResult& r = c.rows[i];
    OJson row;
    row["position"] = pos(r.position);
    if (r.seed) row["seed"] = *r.seed;
    row["verdict"] = verdict_name(v.rows[i].verdict);
    OJson failed = OJson::array();
    for (Metric m : v.rows[i].failed) failed.push_back(metric_name(m));
    row["failed"] = failed;
    row["degenerate"] = r.degenerate;
    row["nonfinite"] = r.nonfinite;
    if (r.stability_cosine) row["stability_cosine"] = num(*r.stability_cosine);
    OJson values = OJson::object();
    for (size_t m = 0; m < kMetricCount; ++m) {
      if (r.values[m]) values[metric_name(static_cast<Metric>(m))] = num(*r.values[m]);
    }
    row["values"] = values;
    rows.push_back(std::move(row));
  }
  j["rows"] = rows;
  return j;
}

OJson slice_json(const RunSlice& slice) {
  OJson groups = OJson::array();
  for (const SliceGroup& g : slice.groups) groups.push_back({{"index", g.index}, {"steps", g.steps}});
  return {{"index", slice.index},
          {"count", slice.count},
          {"unit", "teacher-forced step group"},
          {"groups_total", slice.groups_total},
          {"steps_total", slice.chain_steps.size()},
          {"groups", groups},
          {"chain_steps", slice.chain_steps},
          {"chain_checkpoints", slice.chain_checkpoints}};
}

}  // namespace

std::string golden_report_json(const GoldenReport& report) {
  const FidelityRun& run = report.run;
  const GateSummary& s = report.evaluation.summary;
  OJson root = envelope_json(golden_report_envelope(report));
  OJson views = OJson::array();
  for (const ReportView& v : run.views) {
    OJson feeds = OJson::array();
    for (const StepFeed& f : v.feeds) {
      OJson feed = {{"step", f.step}, {"input", f.input}, {"tensor", f.tensor}, {"source", f.source}};
      feed["golden"] = f.golden.empty() ? OJson(nullptr) : OJson(f.golden);
      feeds.push_back(std::move(feed));
    }
    views.push_back({{"mode", v.mode}, {"answers", v.answers}, {"feeds", feeds}});
  }
  root["views"] = views;
  root["views_finding"] = report.views_finding.empty() ? OJson(nullptr) : OJson(report.views_finding);
  if (run.slice) root["slice"] = slice_json(*run.slice);
  root["options"] = {{"topk", run.options.topk}, {"strict", report.strict}};
  root["policy"] = {{"definition", OJson::parse(gate_policy_json(report.policy))},
                    {"adjusted_on_command_line", report.policy.adjusted_on_command_line}};
  OJson checks = OJson::array();
  for (size_t i = 0; i < run.checks.size(); ++i) {
    checks.push_back(check_json(run.checks[i], report.evaluation.checks[i]));
  }
  root["checks"] = checks;
  root["unmatched"] = {{"reference_only", run.reference_only},
                       {"candidate_only", run.candidate_only}};
  root["notes"] = run.notes;
  OJson summary;
  summary["checks"] = s.checks;
  summary["passed"] = s.passed;
  summary["failed"] = s.failed;
  summary["rows"] = s.rows;
  summary["degenerate_rows"] = s.degenerate_rows;
  summary["unstable_rows"] = s.unstable_rows;
  summary["excluded_checks"] = s.excluded;
  summary["not_gated_checks"] = s.not_gated;
  if (s.first_failure_check) {
    const CheckIdentity& id = run.checks[*s.first_failure_check].identity;
    summary["first_failure"] = {
        {"id", id.id()},
        {"checkpoint", id.checkpoint},
        {"kind", id.kind},
        {"layer", opt_int(id.layer)},
        {"position", pos(s.first_failure_position)},
        {"metric", s.first_failure_metric ? OJson(metric_name(*s.first_failure_metric))
                                          : OJson(nullptr)},
        {"verdict", verdict_name(report.evaluation.checks[*s.first_failure_check].verdict)}};
  } else {
    summary["first_failure"] = nullptr;
  }
  summary["message"] = s.message;
  root["summary"] = summary;
  if (report.culprits || !report.culprits_note.empty()) {
    root["culprits"] = report.culprits ? OJson::parse(culprit_report_json(*report.culprits)) : OJson(nullptr);
    root["culprits_note"] = report.culprits_note;
  }
  if (report.error) {
    root["error"] = {{"kind", report.error->kind},
                     {"message", report.error->message},
                     {"exit_code", report.error->exit_code}};
  }
  return json_util::file_text(root);
}

namespace {

Result<CheckResult> parse_check(const Json& j, const std::string& path, const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  CheckResult c;
  SG_ASSIGN_OR_RETURN(c.identity.checkpoint, json_util::get_string(j, "checkpoint", path, place));
  SG_ASSIGN_OR_RETURN(c.identity.kind, json_util::get_string(j, "kind", path, place));
  SG_ASSIGN_OR_RETURN(c.identity.layer, json_util::get_optional_int(j, "layer", path, place));
  SG_ASSIGN_OR_RETURN(c.identity.shard, json_util::get_string_or(j, "shard", "", path, place));
  if (auto it = j.find("labels"); it != j.end() && !it->is_null()) {
    SG_CHECK(it->is_array(), ErrorCode::kFormat, "{}: {}.labels: expected an array", path, place);
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string lp = json_util::index(place + ".labels", i);
      SG_TRY(json_util::expect_object((*it)[i], path, lp));
      SG_ASSIGN_OR_RETURN(std::string k, json_util::get_string((*it)[i], "key", path, lp));
      SG_ASSIGN_OR_RETURN(std::string v, json_util::get_string((*it)[i], "value", path, lp));
      c.identity.labels.emplace_back(std::move(k), std::move(v));
    }
  }
  auto shape = j.find("shape");
  SG_CHECK(shape != j.end() && shape->is_array(), ErrorCode::kFormat,
           "{}: {}.shape: expected an array", path, place);
  for (size_t d = 0; d < shape->size(); ++d) {
    SG_ASSIGN_OR_RETURN(int64_t dim, json_util::as_int((*shape)[d], path, place + ".shape"));
    c.shape.push_back(dim);
  }
  SG_ASSIGN_OR_RETURN(c.candidate_dtype,
                      json_util::get_string_or(j, "candidate_dtype", "", path, place));
  SG_ASSIGN_OR_RETURN(c.reference_dtype,
                      json_util::get_string_or(j, "reference_dtype", "", path, place));
  SG_ASSIGN_OR_RETURN(auto pa, json_util::get_optional_int(j, "position_axis", path, place));
  c.position_axis = pa.value_or(-1);
  SG_ASSIGN_OR_RETURN(c.row_axis, json_util::get_string_or(j, "row_axis", "position", path, place));
  if (auto it = j.find("excluded"); it != j.end() && !it->is_null()) {
    // Re-gating keeps the exclusion: the report is the only record of why.
    SG_CHECK(it->is_string() && !it->get<std::string>().empty(), ErrorCode::kFormat,
             "{}: {}.excluded: expected a non-empty string or null", path, place);
    c.excluded = it->get<std::string>();
  }
  if (auto it = j.find("nonfinite"); it != j.end() && !it->is_null()) {
    const std::string np = place + ".nonfinite";
    SG_TRY(json_util::expect_object(*it, path, np));
    NonfiniteLocation n;
    SG_ASSIGN_OR_RETURN(n.tensor, json_util::get_string(*it, "tensor", path, np));
    SG_CHECK(it->contains("flat_index"), ErrorCode::kFormat, "{}: {}: missing flat_index", path, np);
    SG_ASSIGN_OR_RETURN(n.flat_index, json_util::as_int((*it)["flat_index"], path, np + ".flat_index"));
    SG_ASSIGN_OR_RETURN(auto p, json_util::get_optional_int(*it, "position", path, np));
    n.position = p.value_or(-1);
    if (it->contains("value")) {
      SG_ASSIGN_OR_RETURN(n.value, json_util::as_number((*it)["value"], path, np + ".value"));
    }
    c.nonfinite = n;
  }
  auto rows = j.find("rows");
  SG_CHECK(rows != j.end() && rows->is_array(), ErrorCode::kFormat,
           "{}: {}.rows: expected an array (per-row values are needed to regate)", path, place);
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string rp = json_util::index(place + ".rows", i);
    const Json& r = (*rows)[i];
    SG_TRY(json_util::expect_object(r, path, rp));
    RowResult row;
    SG_ASSIGN_OR_RETURN(auto p, json_util::get_optional_int(r, "position", path, rp));
    row.position = p.value_or(-1);
    SG_ASSIGN_OR_RETURN(row.seed, json_util::get_optional_int(r, "seed", path, rp));
    if (auto d = r.find("degenerate"); d != r.end()) {
      SG_CHECK(d->is_boolean(), ErrorCode::kFormat, "{}: {}.degenerate: expected a boolean", path, rp);
      row.degenerate = d->get<bool>();
    }
    if (auto n = r.find("nonfinite"); n != r.end()) {
      SG_CHECK(n->is_boolean(), ErrorCode::kFormat, "{}: {}.nonfinite: expected a boolean", path, rp);
      row.nonfinite = n->get<bool>();
    }
    if (auto sc = r.find("stability_cosine"); sc != r.end() && !sc->is_null()) {
      SG_ASSIGN_OR_RETURN(double x, json_util::as_number(*sc, path, rp + ".stability_cosine"));
      row.stability_cosine = x;
    }
    if (auto v = r.find("values"); v != r.end()) {
      SG_TRY(json_util::expect_object(*v, path, rp + ".values"));
      for (auto it = v->begin(); it != v->end(); ++it) {
        const auto m = metric_from_name(it.key());
        SG_CHECK(m.has_value(), ErrorCode::kFormat, "{}: {}.values: unknown metric '{}'", path, rp,
                 it.key());
        SG_ASSIGN_OR_RETURN(double x, json_util::as_number(*it, path, rp + ".values." + it.key()));
        row.value(*m) = x;
      }
    }
    c.rows.push_back(std::move(row));
  }
  return c;
}

Result<std::vector<std::string>> string_list(const Json& obj, const char* key,
                                             const std::string& path, const std::string& place) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  SG_CHECK(it->is_array(), ErrorCode::kFormat, "{}: {}: expected an array of strings", path,
           json_util::join(place, key));
  for (const Json& s : *it) {
    SG_CHECK(s.is_string(), ErrorCode::kFormat, "{}: {}: expected strings", path,
             json_util::join(place, key));
    out.push_back(s.get<std::string>());
  }
  return out;
}

Result<RunSlice> parse_slice(const Json& j, const std::string& path) {
  SG_TRY(json_util::expect_object(j, path, "slice"));
  RunSlice slice;
  for (auto [key, field] : {std::pair{"index", &slice.index}, std::pair{"count", &slice.count},
                            std::pair{"groups_total", &slice.groups_total}}) {
    SG_CHECK(j.contains(key), ErrorCode::kFormat, "{}: slice: missing '{}'", path, key);
    SG_ASSIGN_OR_RETURN(*field, json_util::as_int(j[key], path, std::string("slice.") + key));
  }
  SG_CHECK(slice.count >= 1 && slice.index >= 0 && slice.index < slice.count, ErrorCode::kFormat,
           "{}: slice: index {} is not in [0, count {})", path, slice.index, slice.count);
  auto groups = j.find("groups");
  SG_CHECK(groups != j.end() && groups->is_array(), ErrorCode::kFormat,
           "{}: slice.groups: expected an array", path);
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string gp = json_util::index("slice.groups", i);
    SG_TRY(json_util::expect_object((*groups)[i], path, gp));
    SliceGroup g;
    SG_CHECK((*groups)[i].contains("index"), ErrorCode::kFormat, "{}: {}: missing 'index'", path, gp);
    SG_ASSIGN_OR_RETURN(g.index, json_util::as_int((*groups)[i]["index"], path, gp + ".index"));
    SG_ASSIGN_OR_RETURN(g.steps, string_list((*groups)[i], "steps", path, gp));
    slice.groups.push_back(std::move(g));
  }
  SG_ASSIGN_OR_RETURN(slice.chain_steps, string_list(j, "chain_steps", path, "slice"));
  SG_ASSIGN_OR_RETURN(slice.chain_checkpoints, string_list(j, "chain_checkpoints", path, "slice"));
  return slice;
}

}  // namespace

Result<GoldenReport> parse_golden_report_json(std::string_view json_text, const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, path));
  return golden_report_from_json(root, path);
}

Result<GoldenReport> golden_report_from_json(const Json& root, const std::string& path) {
  SG_TRY(json_util::expect_object(root, path, ""));
  SG_ASSIGN_OR_RETURN(ReportEnvelope envelope,
                      read_envelope_of(root, path, kGoldenReportKind, kGoldenReportVersion,
                                       "golden-validator"));
  if (auto err = root.find("error"); err != root.end() && !err->is_null()) {
    return make_error(ErrorCode::kUsage,
                      "{}: the report records an error, not a measurement: nothing to regate or merge ({})",
                      path, err->is_object() && err->contains("message") ? (*err)["message"].dump() : "");
  }
  GoldenReport report;
  report.tool_version = envelope.tool_version;
  report.command_line = std::move(envelope.command_line);
  FidelityRun& run = report.run;
  run.command = envelope.command;
  run.inputs = std::move(envelope.provenance.inputs);
  run.shards = std::move(envelope.provenance.shards);
  if (auto vs = root.find("views"); vs != root.end() && !vs->is_null()) {
    SG_CHECK(vs->is_array(), ErrorCode::kFormat, "{}: views: expected an array", path);
    for (size_t i = 0; i < vs->size(); ++i) {
      const std::string vp = json_util::index("views", i);
      const Json& vj = (*vs)[i];
      SG_TRY(json_util::expect_object(vj, path, vp));
      ReportView v;
      SG_ASSIGN_OR_RETURN(v.mode, json_util::get_string(vj, "mode", path, vp));
      SG_ASSIGN_OR_RETURN(v.answers, json_util::get_string_or(vj, "answers", "", path, vp));
      if (auto fs = vj.find("feeds"); fs != vj.end() && !fs->is_null()) {
        SG_CHECK(fs->is_array(), ErrorCode::kFormat, "{}: {}.feeds: expected an array", path, vp);
        for (size_t k = 0; k < fs->size(); ++k) {
          const std::string fp = json_util::index(vp + ".feeds", k);
          const Json& fj = (*fs)[k];
          SG_TRY(json_util::expect_object(fj, path, fp));
          StepFeed f;
          SG_ASSIGN_OR_RETURN(f.step, json_util::get_string(fj, "step", path, fp));
          SG_ASSIGN_OR_RETURN(f.input, json_util::get_string(fj, "input", path, fp));
          SG_ASSIGN_OR_RETURN(f.tensor, json_util::get_string_or(fj, "tensor", "", path, fp));
          SG_ASSIGN_OR_RETURN(f.source, json_util::get_string(fj, "source", path, fp));
          if (auto g = fj.find("golden"); g != fj.end() && !g->is_null()) {
            SG_ASSIGN_OR_RETURN(f.golden, json_util::get_string(fj, "golden", path, fp));
          }
          v.feeds.push_back(std::move(f));
        }
      }
      run.views.push_back(std::move(v));
    }
  }
  auto options = root.find("options");
  SG_CHECK(options != root.end() && options->is_object(), ErrorCode::kFormat,
           "{}: options: expected an object", path);
  SG_CHECK(options->contains("topk"), ErrorCode::kFormat, "{}: options: missing 'topk'", path);
  SG_ASSIGN_OR_RETURN(run.options.topk, json_util::as_int((*options)["topk"], path, "options.topk"));
  if (auto st = options->find("strict"); st != options->end() && st->is_boolean()) {
    report.strict = st->get<bool>();
  }
  auto policy = root.find("policy");
  SG_CHECK(policy != root.end() && policy->is_object() && policy->contains("definition"),
           ErrorCode::kFormat, "{}: policy: expected an object with a 'definition'", path);
  SG_ASSIGN_OR_RETURN(report.policy,
                      parse_gate_policy((*policy)["definition"].dump(), path + ": policy.definition"));
  if (auto adj = policy->find("adjusted_on_command_line"); adj != policy->end()) {
    SG_CHECK(adj->is_boolean(), ErrorCode::kFormat,
             "{}: policy.adjusted_on_command_line: expected true or false", path);
    report.policy.adjusted_on_command_line = adj->get<bool>();
  } else {
    // Reports written before the flag existed marked the description instead.
    report.policy.adjusted_on_command_line =
        report.policy.description.find(kAdjustedOnCommandLine) != std::string::npos;
  }
  if (envelope.provenance.gate) {
    report.policy.source = envelope.provenance.gate->path;
    report.policy.sha256 = envelope.provenance.gate->sha256;
  }
  auto checks = root.find("checks");
  SG_CHECK(checks != root.end() && checks->is_array(), ErrorCode::kFormat,
           "{}: checks: expected an array", path);
  for (size_t i = 0; i < checks->size(); ++i) {
    SG_ASSIGN_OR_RETURN(CheckResult c, parse_check((*checks)[i], path, json_util::index("checks", i)));
    run.checks.push_back(std::move(c));
  }
  if (auto u = root.find("unmatched"); u != root.end() && u->is_object()) {
    SG_ASSIGN_OR_RETURN(run.reference_only, string_list(*u, "reference_only", path, "unmatched"));
    SG_ASSIGN_OR_RETURN(run.candidate_only, string_list(*u, "candidate_only", path, "unmatched"));
  }
  SG_ASSIGN_OR_RETURN(run.notes, string_list(root, "notes", path, ""));
  if (auto sl = root.find("slice"); sl != root.end() && !sl->is_null()) {
    SG_ASSIGN_OR_RETURN(run.slice, parse_slice(*sl, path));
  }
  // Verdicts, the summary's view label and the views finding are recomputed, never trusted.
  SG_ASSIGN_OR_RETURN(GoldenReport rebuilt,
                      make_golden_report(std::move(report.run), report.policy, report.strict,
                                         report.tool_version));
  rebuilt.command_line = std::move(report.command_line);
  if (auto c = root.find("culprits"); c != root.end()) {
    auto note = root.find("culprits_note");
    rebuilt.saved_culprit_search = note != root.end() && note->is_string() && !note->get<std::string>().empty()
                                       ? note->get<std::string>()
                                       : std::string("a culprit search");
  }
  return rebuilt;
}

}  // namespace sg
