#include "report/escape.h"

#include <algorithm>

namespace sg {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string md_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    // '<' would open raw HTML (a name holding "<!--" hid the rest of a GitHub job summary) and
    // '&' an entity; a backslash before either shows it as it is.
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '[' || c == ']' || c == '<' || c == '&') {
      out += '\\';
    }
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string md_code(std::string_view s, bool table_cell) {
  size_t longest = 0, run = 0;
  std::string body;
  body.reserve(s.size());
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '\n' || c == '\r') {
      body += ' ';
    } else if (c == '|' && table_cell) {
      body += "\\|";
    } else {
      body += c;
    }
  }
  if (body.empty()) return "` `";
  const std::string fence(longest + 1, '`');
  // A span may not start or end with its own fence character: one space each side, which
  // the renderer strips.
  const char* pad = body.front() == '`' || body.back() == '`' ? " " : "";
  return fence + pad + body + pad + fence;
}

}  // namespace sg
