// The small JSON Schema checker used by report tests (json_schema_lite.h).
#include "support/json_schema_lite.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <set>

namespace sg::testing {
namespace {

using Json = nlohmann::json;

// Keywords whose rule check() implements, and annotations that carry no rule.
const std::set<std::string> kImplemented = {
    "type",     "required", "properties",    "additionalProperties", "minProperties",
    "items",    "prefixItems", "minItems",   "maxItems",             "enum",
    "const",    "$ref",     "oneOf",         "allOf",                "if",
    "then",     "else",     "minimum",       "maximum",              "minLength",
    "pattern"};
const std::set<std::string> kAnnotations = {"$schema",     "$id",     "$defs",    "title",
                                            "description", "default", "$comment", "examples"};

// Walks every subschema (also those a given document never reaches) and lists unknown keywords.
void unsupported(const Json& schema, const std::string& at, std::vector<std::string>& out) {
  if (!schema.is_object()) return;
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& k = it.key();
    if (!kImplemented.count(k) && !kAnnotations.count(k)) {
      out.push_back(at + ": schema keyword '" + k + "' is not implemented by json_schema_lite");
    }
  }
  for (const char* map : {"properties", "$defs"}) {
    if (auto m = schema.find(map); m != schema.end() && m->is_object()) {
      for (auto it = m->begin(); it != m->end(); ++it) {
        unsupported(*it, at + "/" + map + "/" + it.key(), out);
      }
    }
  }
  for (const char* one : {"items", "additionalProperties", "if", "then", "else"}) {
    if (auto s = schema.find(one); s != schema.end()) unsupported(*s, at + "/" + one, out);
  }
  for (const char* list : {"prefixItems", "oneOf", "allOf"}) {
    if (auto l = schema.find(list); l != schema.end() && l->is_array()) {
      for (size_t i = 0; i < l->size(); ++i) {
        unsupported((*l)[i], at + "/" + list + "/" + std::to_string(i), out);
      }
    }
  }
}

// A schema file of reports/schema/ by name ("report-envelope.schema.json"), read once; null when
// the name is not a plain file name or the file does not parse.
const Json* sibling_schema(const std::string& name) {
  static std::map<std::string, Json> loaded;
  if (name.empty() || name.find('/') != std::string::npos) return nullptr;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    std::ifstream in(std::string(SG_SOURCE_DIR) + "/reports/schema/" + name);
    std::stringstream text;
    text << in.rdbuf();
    it = loaded.emplace(name, Json::parse(text.str(), nullptr, false)).first;
  }
  return it->second.is_discarded() || it->second.is_null() ? nullptr : &it->second;
}

bool has_type(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

class Checker {
 public:
  explicit Checker(const Json& root) : root_(root) {}

  void check(const Json& schema, const Json& v, const std::string& at, std::vector<std::string>& out) {
    if (!schema.is_object()) return;
    if (auto ref = schema.find("$ref"); ref != schema.end()) {
      const std::string r = ref->get<std::string>();
      const std::string prefix = "#/$defs/";
      if (r.find('#') == std::string::npos) {
        // Another schema of reports/schema/ (the report envelope), checked with its own root
        // so its "#/$defs/..." references resolve inside it.
        const Json* other = sibling_schema(r);
        if (other == nullptr) {
          out.push_back(at + ": unresolvable $ref " + r);
          return;
        }
        Checker(*other).check(*other, v, at, out);
      } else {
        const auto defs = root_.find("$defs");
        if (r.rfind(prefix, 0) != 0 || defs == root_.end() ||
            !defs->contains(r.substr(prefix.size()))) {
          out.push_back(at + ": unresolvable $ref " + r);
          return;
        }
        check((*defs)[r.substr(prefix.size())], v, at, out);
      }
    }
    if (auto t = schema.find("type"); t != schema.end()) {
      bool ok = false;
      if (t->is_string()) ok = has_type(v, t->get<std::string>());
      for (const auto& x : t->is_array() ? *t : Json::array()) ok = ok || has_type(v, x.get<std::string>());
      if (!ok) {
        out.push_back(at + ": expected type " + t->dump() + ", got " + v.type_name());
        return;
      }
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != v) {
      out.push_back(at + ": expected " + c->dump() + ", got " + v.dump());
    }
    if (auto e = schema.find("enum"); e != schema.end()) {
      bool found = false;
      for (const auto& x : *e) found = found || x == v;
      if (!found) out.push_back(at + ": " + v.dump() + " not in " + e->dump());
    }
    if (auto one = schema.find("oneOf"); one != schema.end()) {
      int passing = 0;
      for (const auto& s : *one) {
        std::vector<std::string> tmp;
        check(s, v, at, tmp);
        passing += tmp.empty() ? 1 : 0;
      }
      if (passing != 1) out.push_back(at + ": matches " + std::to_string(passing) + " of oneOf");
    }
    if (auto all = schema.find("allOf"); all != schema.end()) {
      for (const auto& s : *all) check(s, v, at, out);
    }
    // if / then / else: the document is checked against "then" when it satisfies "if", else
    // against "else" (either may be absent).
    if (auto cond = schema.find("if"); cond != schema.end()) {
      std::vector<std::string> tmp;
      check(*cond, v, at, tmp);
      const char* branch = tmp.empty() ? "then" : "else";
      if (auto b = schema.find(branch); b != schema.end()) check(*b, v, at, out);
    }
    if (v.is_number()) {
      if (auto m = schema.find("minimum"); m != schema.end() && v.get<double>() < m->get<double>()) {
        out.push_back(at + ": below minimum " + m->dump());
      }
      if (auto m = schema.find("maximum"); m != schema.end() && v.get<double>() > m->get<double>()) {
        out.push_back(at + ": above maximum " + m->dump());
      }
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (auto m = schema.find("minLength"); m != schema.end() && s.size() < m->get<size_t>()) {
        out.push_back(at + ": shorter than " + m->dump());
      }
      if (auto p = schema.find("pattern"); p != schema.end() &&
                                           !std::regex_search(s, std::regex(p->get<std::string>()))) {
        out.push_back(at + ": '" + s + "' does not match " + p->get<std::string>());
      }
    }
    if (v.is_object()) {
      if (auto req = schema.find("required"); req != schema.end()) {
        for (const auto& k : *req) {
          if (!v.contains(k.get<std::string>())) out.push_back(at + ": missing required '" + k.get<std::string>() + "'");
        }
      }
      if (auto mp = schema.find("minProperties"); mp != schema.end() && v.size() < mp->get<size_t>()) {
        out.push_back(at + ": fewer keys than " + mp->dump());
      }
      const Json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (props && props->contains(it.key())) {
          check((*props)[it.key()], *it, at + "." + it.key(), out);
        } else if (auto ap = schema.find("additionalProperties"); ap != schema.end()) {
          if (ap->is_boolean() && !ap->get<bool>()) {
            out.push_back(at + ": unexpected key '" + it.key() + "'");
          } else if (ap->is_object()) {
            check(*ap, *it, at + "." + it.key(), out);
          }
        }
      }
    }
    if (v.is_array()) {
      // prefixItems constrain the first elements one by one; items the rest (draft 2020-12).
      size_t first_rest = 0;
      if (auto pre = schema.find("prefixItems"); pre != schema.end()) {
        first_rest = pre->size();
        for (size_t i = 0; i < v.size() && i < pre->size(); ++i) {
          check((*pre)[i], v[i], at + "[" + std::to_string(i) + "]", out);
        }
      }
      if (auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = first_rest; i < v.size(); ++i) check(*items, v[i], at + "[" + std::to_string(i) + "]", out);
      }
      if (auto mi = schema.find("minItems"); mi != schema.end() && v.size() < mi->get<size_t>()) {
        out.push_back(at + ": fewer items than " + mi->dump());
      }
      if (auto mi = schema.find("maxItems"); mi != schema.end() && v.size() > mi->get<size_t>()) {
        out.push_back(at + ": more items than " + mi->dump());
      }
    }
  }

 private:
  const Json& root_;
};

}  // namespace

std::vector<std::string> json_schema_unsupported_keywords(const std::string& schema_text) {
  const Json schema = Json::parse(schema_text, nullptr, false);
  if (schema.is_discarded()) return {"schema: invalid JSON"};
  std::vector<std::string> out;
  unsupported(schema, "#", out);
  return out;
}

std::vector<std::string> json_schema_violations(const std::string& schema_text,
                                                const std::string& document_text) {
  const Json schema = Json::parse(schema_text, nullptr, false);
  const Json doc = Json::parse(document_text, nullptr, false);
  if (schema.is_discarded()) return {"schema: invalid JSON"};
  if (doc.is_discarded()) return {"document: invalid JSON"};
  std::vector<std::string> out;
  unsupported(schema, "#", out);
  if (!out.empty()) return out;  // a rule we cannot check must not read as "valid"
  Checker(schema).check(schema, doc, "$", out);
  return out;
}

}  // namespace sg::testing
