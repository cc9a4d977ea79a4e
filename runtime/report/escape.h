// Escaping for the text reports (JUnit XML, Markdown), shared by both validators' reports.
#pragma once

#include <string>
#include <string_view>

namespace sg {

// XML 1.0 text/attribute escaping; control characters XML forbids become spaces.
std::string xml_escape(std::string_view s);
// Markdown text or table cell: Markdown punctuation, '<' (raw HTML) and '&' (entities) escaped
// with a backslash, newlines become spaces.
std::string md_escape(std::string_view s);
// A Markdown code span (backticks included) that shows `s` exactly: inside one, a backslash is
// not an escape but shows, so md_escape's output must never go there. The fence is one
// backtick longer than the longest run of them in `s`; newlines become spaces. In a table
// cell (`table_cell`) a '|' would still end the cell and is written '\|', which GFM shows as '|'.
std::string md_code(std::string_view s, bool table_cell = false);

}  // namespace sg
