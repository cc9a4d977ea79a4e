// Escaping for the text reports (JUnit XML, Markdown), shared by both validators' reports.
#pragma once

#include <string>
#include <string_view>

namespace sg {

// XML 1.0 text/attribute escaping; control characters XML forbids become spaces.
std::string xml_escape(std::string_view s);
// Markdown table cell: Markdown punctuation escaped, newlines become spaces.
std::string md_escape(std::string_view s);

}  // namespace sg
