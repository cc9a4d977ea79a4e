// A small JSON Schema checker for tests: enough of draft 2020-12 to validate our reports
// against reports/schema/*.json structurally (type, required, properties, items, enum, const,
// $ref to "#/$defs/...", oneOf, additionalProperties, minimum, minLength, pattern).
// Unknown keywords are ignored. Returns the list of violations (empty = valid).
#pragma once

#include <string>
#include <vector>

namespace sg::testing {

// `schema_text` and `document_text` are JSON texts; parse errors are reported as violations.
std::vector<std::string> json_schema_violations(const std::string& schema_text,
                                                const std::string& document_text);

}  // namespace sg::testing
