// The report envelope (shardgate/report_envelope.h): one writer and one reader for the fields
// every JSON report of both tools opens with.
#include "report/envelope_json.h"

#include <algorithm>
#include <charconv>

namespace sg {
namespace {

using json_util::Json;
using json_util::OrderedJson;

OrderedJson file_json(const ReportInput& f) {
  return {{"role", f.role},
          {"path", f.path},
          {"sha256", f.sha256.empty() ? OrderedJson(nullptr) : OrderedJson(f.sha256)}};
}

Result<ReportInput> read_file(const Json& j, const std::string& path, const std::string& place) {
  SG_TRY(json_util::expect_object(j, path, place));
  ReportInput f;
  SG_ASSIGN_OR_RETURN(f.role, json_util::get_string(j, "role", path, place));
  SG_ASSIGN_OR_RETURN(f.path, json_util::get_string(j, "path", path, place));
  SG_ASSIGN_OR_RETURN(f.sha256, json_util::get_string_or(j, "sha256", "", path, place));
  return f;
}

// "shardgate/<kind>@<N>" -> (kind, N); nullopt for any other form.
std::optional<std::pair<std::string, int>> split_schema_version(const std::string& s) {
  constexpr std::string_view prefix = "shardgate/";
  const size_t at = s.rfind('@');
  if (s.rfind(prefix, 0) != 0 || at == std::string::npos || at <= prefix.size()) return std::nullopt;
  int version = 0;
  const char* first = s.data() + at + 1;
  const char* last = s.data() + s.size();
  auto [end, ec] = std::from_chars(first, last, version);
  if (ec != std::errc() || end != last || first == last || version < 1) return std::nullopt;
  return std::pair{s.substr(prefix.size(), at - prefix.size()), version};
}

}  // namespace

ReportEnvelope make_report_envelope(std::string_view kind, int version, std::string_view tool,
                                    std::string tool_version, std::string_view command,
                                    std::vector<std::string> command_line) {
  ReportEnvelope e;
  e.kind = kind;
  e.version = version;
  e.tool = tool;
  e.tool_version = std::move(tool_version);
  e.command = command;
  e.command_line = std::move(command_line);
  return e;
}

std::string report_schema_version(std::string_view kind, int version) {
  return fmt::format("shardgate/{}@{}", kind, version);
}

OrderedJson envelope_json(const ReportEnvelope& e) {
  OrderedJson j;
  j["schema_version"] = report_schema_version(e.kind, e.version);
  j["tool"] = {{"name", e.tool}, {"version", e.tool_version}};
  j["command"] = e.command;
  j["command_line"] = e.command_line;
  j["verdict"] = e.verdict;
  j["exit_code"] = e.exit_code;
  OrderedJson inputs = OrderedJson::array();
  for (const ReportInput& f : e.provenance.inputs) inputs.push_back(file_json(f));
  OrderedJson shards = OrderedJson::array();
  for (const ReportShard& s : e.provenance.shards) {
    OrderedJson sj = {{"path", s.path},
                      {"fingerprint", s.fingerprint.empty() ? OrderedJson(nullptr)
                                                            : OrderedJson(s.fingerprint)}};
    if (!s.id.empty()) sj["id"] = s.id;
    shards.push_back(std::move(sj));
  }
  j["provenance"] = {
      {"gate", e.provenance.gate ? file_json(*e.provenance.gate) : OrderedJson(nullptr)},
      {"inputs", inputs},
      {"shards", shards}};
  return j;
}

Result<ReportEnvelope> read_envelope(const Json& root, const std::string& path) {
  SG_TRY(json_util::expect_object(root, path, ""));
  auto sv = root.find("schema_version");
  SG_CHECK(sv != root.end(), ErrorCode::kFormat,
           "{}: top level: missing key 'schema_version' (not a shardgate report)", path);
  SG_CHECK(!sv->is_number_integer(), ErrorCode::kFormat,
           "{}: schema_version: {} is the ane-validator report before the shared envelope "
           "(shardgate 0.1.0 before report format 3): re-run ane-validator to get a report "
           "this version reads",
           path, sv->dump());
  SG_ASSIGN_OR_RETURN(std::string schema, json_util::get_string(root, "schema_version", path, ""));
  const auto parts = split_schema_version(schema);
  SG_CHECK(parts.has_value(), ErrorCode::kFormat,
           "{}: schema_version: expected \"shardgate/<kind>@<N>\", got \"{}\" (not a shardgate "
           "report)",
           path, schema);
  ReportEnvelope e;
  e.kind = parts->first;
  e.version = parts->second;
  SG_CHECK(root.contains("provenance"), ErrorCode::kFormat,
           "{}: top level: missing key 'provenance': a {} report written before the shared "
           "envelope; re-run the tool that wrote it",
           path, schema);
  auto tool = root.find("tool");
  SG_CHECK(tool != root.end() && tool->is_object(), ErrorCode::kFormat,
           "{}: tool: expected an object {{\"name\", \"version\"}}", path);
  SG_ASSIGN_OR_RETURN(e.tool, json_util::get_string(*tool, "name", path, "tool"));
  SG_ASSIGN_OR_RETURN(e.tool_version, json_util::get_string(*tool, "version", path, "tool"));
  SG_ASSIGN_OR_RETURN(e.command, json_util::get_string(root, "command", path, ""));
  auto argv = root.find("command_line");
  SG_CHECK(argv != root.end() && argv->is_array(), ErrorCode::kFormat,
           "{}: command_line: expected an array of strings", path);
  for (size_t i = 0; i < argv->size(); ++i) {
    SG_CHECK((*argv)[i].is_string(), ErrorCode::kFormat, "{}: {}: expected a string", path,
             json_util::index("command_line", i));
    e.command_line.push_back((*argv)[i].get<std::string>());
  }
  SG_ASSIGN_OR_RETURN(e.verdict, json_util::get_string(root, "verdict", path, ""));
  SG_CHECK(std::find(std::begin(kReportVerdicts), std::end(kReportVerdicts), e.verdict) !=
               std::end(kReportVerdicts),
           ErrorCode::kFormat, "{}: verdict: unknown verdict \"{}\"", path, e.verdict);
  auto code = root.find("exit_code");
  SG_CHECK(code != root.end(), ErrorCode::kFormat, "{}: top level: missing key 'exit_code'", path);
  SG_ASSIGN_OR_RETURN(int64_t exit_code, json_util::as_int(*code, path, "exit_code"));
  SG_CHECK(exit_code >= 0 && exit_code <= 3, ErrorCode::kFormat,
           "{}: exit_code: {} is not an exit code of shardgate (0..3)", path, exit_code);
  e.exit_code = static_cast<int>(exit_code);
  const Json& prov = root["provenance"];
  SG_TRY(json_util::expect_object(prov, path, "provenance"));
  if (auto g = prov.find("gate"); g != prov.end() && !g->is_null()) {
    SG_ASSIGN_OR_RETURN(ReportInput gate, read_file(*g, path, "provenance.gate"));
    e.provenance.gate = std::move(gate);
  }
  for (const char* list : {"inputs", "shards"}) {
    const std::string place = std::string("provenance.") + list;
    auto l = prov.find(list);
    SG_CHECK(l != prov.end() && l->is_array(), ErrorCode::kFormat, "{}: {}: expected an array",
             path, place);
    for (size_t i = 0; i < l->size(); ++i) {
      const std::string ip = json_util::index(place, i);
      if (std::string_view(list) == "inputs") {
        SG_ASSIGN_OR_RETURN(ReportInput f, read_file((*l)[i], path, ip));
        e.provenance.inputs.push_back(std::move(f));
      } else {
        SG_TRY(json_util::expect_object((*l)[i], path, ip));
        ReportShard s;
        SG_ASSIGN_OR_RETURN(s.path, json_util::get_string((*l)[i], "path", path, ip));
        SG_ASSIGN_OR_RETURN(s.fingerprint,
                            json_util::get_string_or((*l)[i], "fingerprint", "", path, ip));
        SG_ASSIGN_OR_RETURN(s.id, json_util::get_string_or((*l)[i], "id", "", path, ip));
        e.provenance.shards.push_back(std::move(s));
      }
    }
  }
  return e;
}

Result<ReportEnvelope> read_envelope_of(const Json& root, const std::string& path,
                                        std::string_view kind, int version,
                                        std::string_view tool) {
  SG_ASSIGN_OR_RETURN(ReportEnvelope e, read_envelope(root, path));
  SG_CHECK(e.kind == kind && e.tool == tool, ErrorCode::kFormat,
           "{}: schema_version: expected a {} report ({}), got {} of {}", path,
           report_schema_version(kind, version), tool, report_schema_version(e.kind, e.version),
           e.tool);
  SG_CHECK(e.version == version, ErrorCode::kFormat,
           "{}: schema_version: {} is version {} of this report; this {} reads version {}: "
           "re-run the tool that wrote it",
           path, report_schema_version(e.kind, e.version), e.version, tool, version);
  return e;
}

Result<ReportEnvelope> parse_report_envelope(std::string_view json_text, const std::string& path) {
  SG_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, path));
  return read_envelope(root, path);
}

}  // namespace sg
