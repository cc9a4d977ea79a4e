// Reading an ane-validator JSON report back into a ResidencyReport (residency_report.h), for
// `golden-validator merge`: the merged report is rendered by the same writers as a single run,
// so its JSON, JUnit and Markdown equal that run's by construction. Only what the writer takes
// from a ShardCheck is read; names, verdict words and the rules used are derived again.
#include "shardgate/residency_report.h"

#include "core/json.h"
#include "report/envelope_json.h"
#include "report/residency_report_read.h"

namespace sg {
namespace {

using json_util::Json;

// A small reader over one JSON object that names the file and the place in every error.
class Reader {
 public:
  Reader(const Json& j, const std::string& path, std::string place)
      : j_(j), path_(path), place_(std::move(place)) {}

  Status object() const { return json_util::expect_object(j_, path_, place_); }
  const Json& at(const std::string& key) const {
    static const Json kNull;
    auto it = j_.find(key);
    return it == j_.end() ? kNull : *it;
  }
  std::string where(const std::string& key) const { return json_util::join(place_, key); }

  Result<std::string> str(const std::string& key) const {
    return json_util::get_string(j_, key, path_, place_);
  }
  // A string or null ("" for null).
  Result<std::string> opt_str(const std::string& key) const {
    if (at(key).is_null()) return std::string();
    return str(key);
  }
  Result<int64_t> integer(const std::string& key) const {
    SG_CHECK(j_.contains(key), ErrorCode::kFormat, "{}: {}: missing", path_, where(key));
    return json_util::as_int(at(key), path_, where(key));
  }
  Result<double> number(const std::string& key) const {
    SG_CHECK(j_.contains(key), ErrorCode::kFormat, "{}: {}: missing", path_, where(key));
    return json_util::as_number(at(key), path_, where(key));
  }
  Result<std::optional<double>> opt_number(const std::string& key) const {
    if (at(key).is_null()) return std::optional<double>();
    SG_ASSIGN_OR_RETURN(double v, number(key));
    return std::optional<double>(v);
  }
  Result<bool> boolean(const std::string& key) const {
    SG_CHECK(at(key).is_boolean(), ErrorCode::kFormat, "{}: {}: expected a boolean", path_,
             where(key));
    return at(key).get<bool>();
  }
  Result<std::vector<std::string>> strings(const std::string& key) const {
    const Json& a = at(key);
    SG_CHECK(a.is_array(), ErrorCode::kFormat, "{}: {}: expected an array", path_, where(key));
    std::vector<std::string> out;
    for (const Json& s : a) {
      SG_CHECK(s.is_string(), ErrorCode::kFormat, "{}: {}: expected strings", path_, where(key));
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  Result<const Json*> array(const std::string& key) const {
    SG_CHECK(at(key).is_array(), ErrorCode::kFormat, "{}: {}: expected an array", path_,
             where(key));
    return &at(key);
  }
  // Every item of the array at `key`, each read by parse(Reader of the item).
  template <typename T, typename Parse>
  Result<std::vector<T>> list(const std::string& key, Parse parse) const {
    SG_ASSIGN_OR_RETURN(const Json* a, array(key));
    std::vector<T> out;
    for (size_t i = 0; i < a->size(); ++i) {
      SG_ASSIGN_OR_RETURN(T v, parse(item((*a)[i], key, i)));
      out.push_back(std::move(v));
    }
    return out;
  }
  Reader child(const std::string& key) const { return Reader(at(key), path_, where(key)); }
  Reader item(const Json& j, const std::string& key, size_t i) const {
    return Reader(j, path_, json_util::index(where(key), i));
  }
  const std::string& path() const { return path_; }
  const std::string& place() const { return place_; }

 private:
  const Json& j_;
  const std::string& path_;
  std::string place_;
};

// The enum value whose printed name is `name` (the writers print these names).
template <typename E>
Result<E> enum_named(const Reader& r, const std::string& key, int count, const char* (*name)(E)) {
  SG_ASSIGN_OR_RETURN(std::string text, r.str(key));
  for (int i = 0; i < count; ++i) {
    if (text == name(static_cast<E>(i))) return static_cast<E>(i);
  }
  return make_error(ErrorCode::kFormat, "{}: {}: unknown value '{}'", r.path(), r.where(key), text);
}

Result<ResidencySummary> parse_summary(const Reader& r) {
  SG_TRY(r.object());
  ResidencySummary s;
  for (auto [key, field] : {std::pair{"total_ops", &s.total_ops},
                            std::pair{"compile_time_ops", &s.compile_time_ops},
                            std::pair{"compute_ops", &s.compute_ops}, std::pair{"on_ane", &s.on_ane},
                            std::pair{"at_risk", &s.at_risk}, std::pair{"fallbacks", &s.fallbacks},
                            std::pair{"unknown", &s.unknown}, std::pair{"costed_ops", &s.costed_ops},
                            std::pair{"body_ops", &s.body_ops}, std::pair{"body_ane", &s.body_ane},
                            std::pair{"body_at_risk", &s.body_at_risk},
                            std::pair{"body_off_ane", &s.body_off_ane},
                            std::pair{"boundary_casts", &s.boundary_casts},
                            std::pair{"boundary_casts_not_ane", &s.boundary_casts_not_ane}}) {
    SG_ASSIGN_OR_RETURN(*field, r.integer(key));
  }
  SG_ASSIGN_OR_RETURN(s.residency_pct, r.opt_number("residency_pct"));
  SG_ASSIGN_OR_RETURN(s.cost_weighted_pct, r.opt_number("cost_weighted_pct"));
  SG_ASSIGN_OR_RETURN(s.residency_low_pct, r.opt_number("residency_low_pct"));
  return s;
}

Result<OpPlacement> parse_op(const Reader& r) {
  SG_TRY(r.object());
  OpPlacement op;
  SG_ASSIGN_OR_RETURN(op.function, r.str("function"));
  SG_ASSIGN_OR_RETURN(const Json* block, r.array("block_path"));
  for (size_t i = 0; i < block->size(); ++i) {
    SG_ASSIGN_OR_RETURN(int64_t b, json_util::as_int((*block)[i], r.path(), r.where("block_path")));
    op.block_path.push_back(b);
  }
  SG_ASSIGN_OR_RETURN(op.index, r.integer("index"));
  SG_ASSIGN_OR_RETURN(op.line, r.integer("line"));
  SG_ASSIGN_OR_RETURN(op.type, r.str("type"));
  SG_ASSIGN_OR_RETURN(op.outputs, r.strings("outputs"));
  SG_ASSIGN_OR_RETURN(op.dtype, r.str("dtype"));
  op.shape_known = !r.at("shape").is_null();
  if (op.shape_known) {
    SG_ASSIGN_OR_RETURN(const Json* shape, r.array("shape"));
    for (size_t i = 0; i < shape->size(); ++i) {
      SG_ASSIGN_OR_RETURN(int64_t d, json_util::as_int((*shape)[i], r.path(), r.where("shape")));
      op.shape.push_back(d);
    }
  }
  SG_ASSIGN_OR_RETURN(op.op_class, enum_named<OpClass>(r, "class", 2, &op_class_name));
  SG_ASSIGN_OR_RETURN(op.placement, enum_named<Placement>(r, "placement", 7, &placement_name));
  SG_ASSIGN_OR_RETURN(op.source, enum_named<PlacementSource>(r, "source", 2, &placement_source_name));
  SG_ASSIGN_OR_RETURN(op.preferred, r.opt_str("preferred"));
  SG_ASSIGN_OR_RETURN(op.supported, r.strings("supported"));
  SG_ASSIGN_OR_RETURN(op.cost, r.opt_number("cost"));
  SG_ASSIGN_OR_RETURN(op.predicted, enum_named<Placement>(r, "predicted", 7, &placement_name));
  SG_ASSIGN_OR_RETURN(op.rule_id, r.str("rule"));
  SG_ASSIGN_OR_RETURN(op.reason, r.str("reason"));
  SG_ASSIGN_OR_RETURN(op.detail, r.str("detail"));
  SG_ASSIGN_OR_RETURN(op.overlay_rule, r.opt_str("overlay_rule"));
  SG_ASSIGN_OR_RETURN(op.overlay_detail, r.str("overlay_detail"));
  SG_ASSIGN_OR_RETURN(op.boundary_cast, r.boolean("boundary_cast"));
  return op;
}

const char* error_code_at(int i) { return error_code_name(static_cast<ErrorCode>(i)); }

Result<ShardCheck> parse_shard(const Reader& r) {
  SG_TRY(r.object());
  ShardCheck s;
  SG_ASSIGN_OR_RETURN(s.path, r.str("path"));
  SG_ASSIGN_OR_RETURN(s.form, r.opt_str("form"));
  SG_ASSIGN_OR_RETURN(s.program_sha256, r.opt_str("program_sha256"));
  SG_ASSIGN_OR_RETURN(s.fingerprint, r.opt_str("fingerprint"));
  if (!r.at("error").is_null()) {
    const Reader e = r.child("error");
    SG_TRY(e.object());
    SG_ASSIGN_OR_RETURN(std::string code, e.str("code"));
    SG_ASSIGN_OR_RETURN(std::string message, e.str("message"));
    std::optional<ErrorCode> found;
    for (int i = 0; i <= static_cast<int>(ErrorCode::kInternal); ++i) {
      if (code == error_code_at(i)) found = static_cast<ErrorCode>(i);
    }
    SG_CHECK(found.has_value() && *found != ErrorCode::kOk, ErrorCode::kFormat,
             "{}: {}: unknown error code '{}'", r.path(), e.where("code"), code);
    s.error = Status(*found, message);
  } else {
    SG_ASSIGN_OR_RETURN(s.model_verdict,
                        enum_named<ModelVerdict>(r, "model_verdict", 3, &model_verdict_name));
  }
  SG_ASSIGN_OR_RETURN(s.shard_failures, r.strings("shard_failures"));
  SG_ASSIGN_OR_RETURN(s.source,
                      enum_named<PlacementSource>(r, "placement_source", 2, &placement_source_name));
  SG_ASSIGN_OR_RETURN(s.plan_path, r.opt_str("plan"));
  // Absent in reports written before the dump's hash was recorded: read as unknown.
  SG_ASSIGN_OR_RETURN(s.plan_sha256, r.opt_str("plan_sha256"));
  SG_ASSIGN_OR_RETURN(s.plan_matched_by, r.opt_str("plan_matched_by"));
  // Absent in reports written before the dump's provenance was shown: read as unknown.
  SG_ASSIGN_OR_RETURN(s.plan_taken_on, r.opt_str("plan_taken_on"));
  SG_ASSIGN_OR_RETURN(s.summary, parse_summary(r.child("summary")));
  const Reader gate = r.child("gate");
  SG_TRY(gate.object());
  SG_ASSIGN_OR_RETURN(s.threshold.min_residency_pct, gate.number("min_residency_pct"));
  SG_ASSIGN_OR_RETURN(s.threshold.origin, gate.str("origin"));
  SG_ASSIGN_OR_RETURN(s.threshold.reason, gate.str("reason"));
  SG_ASSIGN_OR_RETURN(s.strict, gate.boolean("strict"));
  SG_ASSIGN_OR_RETURN(s.verdict.passed, gate.boolean("passed"));
  SG_ASSIGN_OR_RETURN(s.verdict.failures, gate.strings("failures"));
  SG_ASSIGN_OR_RETURN(s.checks, r.list<ContractCheckResult>("checks", [](const Reader& c)
                                                                    -> Result<ContractCheckResult> {
    SG_TRY(c.object());
    ContractCheckResult cr;
    SG_ASSIGN_OR_RETURN(cr.name, c.str("name"));
    SG_ASSIGN_OR_RETURN(cr.spec, c.str("spec"));
    SG_ASSIGN_OR_RETURN(cr.passed, c.boolean("passed"));
    SG_ASSIGN_OR_RETURN(cr.detail, c.str("detail"));
    SG_ASSIGN_OR_RETURN(cr.offenders, c.strings("offenders"));
    return cr;
  }));
  SG_ASSIGN_OR_RETURN(s.plan_failures, r.strings("plan_failures"));
  SG_ASSIGN_OR_RETURN(s.ops, r.list<OpPlacement>("ops", parse_op));
  return s;
}

}  // namespace

Result<ResidencyReport> parse_residency_report_json(std::string_view json_text,
                                                    const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, path));
  return residency_report_from_json(root, path);
}

Result<ResidencyReport> residency_report_from_json(const Json& root, const std::string& path) {
  const Reader r(root, path, "");
  SG_TRY(r.object());
  SG_ASSIGN_OR_RETURN(ReportEnvelope envelope,
                      read_envelope_of(root, path, kResidencyReportKind, kResidencyReportVersion,
                                       "ane-validator"));
  ResidencyReport report;
  report.tool = envelope.tool;
  report.tool_version = envelope.tool_version;
  report.command = envelope.command;
  report.command_line = std::move(envelope.command_line);
  for (ReportInput& in : envelope.provenance.inputs) {
    // Plan dumps are listed again from the shards; the rest (merged slices) is the report's own.
    if (in.role != "plan") report.inputs.push_back(std::move(in));
  }
  if (envelope.provenance.gate) {
    report.gate_file = envelope.provenance.gate->path;
    report.gate_file_sha256 = envelope.provenance.gate->sha256;
  }
  SG_ASSIGN_OR_RETURN(report.fingerprinted, r.boolean("fingerprinted"));
  SG_ASSIGN_OR_RETURN(report.strict, r.boolean("strict"));
  const Reader sel = r.child("selection");
  SG_TRY(sel.object());
  SG_ASSIGN_OR_RETURN(report.shard_index, sel.integer("shard_index"));
  SG_ASSIGN_OR_RETURN(report.shard_count, sel.integer("shard_count"));
  // Reports written before fan-out merging lack these two; merge then cannot check them.
  if (!sel.at("shards_total").is_null()) {
    SG_ASSIGN_OR_RETURN(report.shards_total, sel.integer("shards_total"));
  }
  SG_ASSIGN_OR_RETURN(report.shard_list_sha256, sel.opt_str("shard_list_sha256"));
  SG_ASSIGN_OR_RETURN(report.shards, r.list<ShardCheck>("shards", parse_shard));
  return report;
}

}  // namespace sg
