// A small JSON Schema checker for tests: the part of draft 2020-12 that reports/schema/*.json
// use, implemented fully: type, required, properties, additionalProperties, minProperties,
// items, prefixItems, minItems, maxItems, enum, const, $ref to "#/$defs/..." or to another file
// of reports/schema/ ("report-envelope.schema.json"), oneOf, allOf, if/then/else, minimum,
// maximum, minLength, pattern. Annotations ($schema, $id, $defs, title, description, default,
// $comment, examples) are accepted. Any other keyword is refused: a schema relying on a rule
// this checker does not implement would otherwise pass documents that break the rule.
#pragma once

#include <string>
#include <vector>

namespace sg::testing {

// `schema_text` and `document_text` are JSON texts. Returns the violations (empty = valid);
// parse errors and keywords the checker does not implement are violations too.
std::vector<std::string> json_schema_violations(const std::string& schema_text,
                                                const std::string& document_text);

// Keywords of `schema_text` that this checker does not implement (empty = it can be trusted).
std::vector<std::string> json_schema_unsupported_keywords(const std::string& schema_text);

}  // namespace sg::testing
