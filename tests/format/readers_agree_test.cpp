// The two program readers agree: for each corpus model, parse_mil_text(model.mil of the
// .mlmodelc) and parse_model_proto(model.mlmodel of the .mlpackage it was compiled from) give
// the same program (runtime/format/README.md).
//
// Differences inherent to the formats are normalised explicitly, and only these:
//  1. Program.version: the text header says "1.0" (chosen by the compiler), the protobuf
//     stores the integer 1. Not compared.
//  2. Program and function attributes: the compiler adds entries (buildInfo gains
//     "coremlc-component-MIL" / "coremlc-version"; FlexibleShapeInformation may be added to a
//     function). Every attribute of the protobuf must appear in the text with an equal value;
//     for dict-valued attributes every protobuf entry must appear among the text's entries.
//     Extra text entries are allowed.
//  3. Function inputs: the text prints them sorted by name, the protobuf keeps declaration
//     order. Compared as sets (name -> type).
// Everything else (op sequence, op types, output names and types, input keys and bindings,
// literal values element by element, BLOBFILE paths and offsets, attribute keys and values)
// must be identical; the comparison goes through a line dump so a failure shows the first
// differing line.
#include "shardgate/io.h"
#include "shardgate/readers.h"
#include "support/program_dump.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace sg {
namespace {

using sg::testing::kSileroDir;
using sg::testing::kSileroModels;

Result<Program> read_text(const std::string& name) {
  const std::string path = kSileroDir + name + ".mlmodelc/model.mil";
  SG_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_mil_text(text, path);
}

Result<Program> read_proto(const std::string& name) {
  const std::string path = kSileroDir + name + ".mlpackage/Data/com.apple.CoreML/model.mlmodel";
  SG_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  SG_ASSIGN_OR_RETURN(ProtoModel m, parse_model_proto(
                                        std::as_bytes(std::span<const char>(bytes.data(),
                                                                            bytes.size())),
                                        path));
  return std::move(m.program);
}

const Value* find_attr(const std::vector<std::pair<std::string, Value>>& attrs,
                       const std::string& key) {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Normalisation 2: every protobuf attribute (dict entry) is present in the text.
void expect_attributes_contained(const std::vector<std::pair<std::string, Value>>& proto,
                                 const std::vector<std::pair<std::string, Value>>& text,
                                 const std::string& where) {
  for (const auto& [key, pv] : proto) {
    SCOPED_TRACE(where + " attribute " + key);
    const Value* tv = find_attr(text, key);
    ASSERT_NE(tv, nullptr) << "missing in the text";
    if (pv.type.kind != ValueType::Kind::kDict) {
      EXPECT_EQ(testing::dump_value(*tv), testing::dump_value(pv));
      continue;
    }
    ASSERT_EQ(tv->type.kind, ValueType::Kind::kDict);
    for (const auto& [pk, pval] : pv.entries) {
      const std::string want = testing::dump_value(pk) + ": " + testing::dump_value(pval);
      bool found = false;
      for (const auto& [tk, tval] : tv->entries) {
        found = found || testing::dump_value(tk) + ": " + testing::dump_value(tval) == want;
      }
      EXPECT_TRUE(found) << "entry " << want << " missing in the text";
    }
  }
}

// Applies normalisations 1-3 after checking what they drop.
void normalise(Program& text, Program& proto) {
  expect_attributes_contained(proto.attributes, text.attributes, "program");
  text.attributes.clear();
  proto.attributes.clear();
  text.version.clear();
  proto.version.clear();
  ASSERT_EQ(text.functions.size(), proto.functions.size());
  for (size_t i = 0; i < text.functions.size(); ++i) {
    Function& tf = text.functions[i];
    Function& pf = proto.functions[i];
    expect_attributes_contained(pf.attributes, tf.attributes, "function " + pf.name);
    tf.attributes.clear();
    pf.attributes.clear();
    const auto by_name = [](const NamedType& a, const NamedType& b) { return a.name < b.name; };
    std::sort(tf.inputs.begin(), tf.inputs.end(), by_name);
    std::sort(pf.inputs.begin(), pf.inputs.end(), by_name);
  }
}

// First differing line of two dumps, for a short failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  int line = 1;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (!ga || !gb || la != lb) {
      return "line " + std::to_string(line) + ":\n  text:  " + (ga ? la : "<end>") +
             "\n  proto: " + (gb ? lb : "<end>");
    }
    ++line;
  }
}

TEST(ReadersAgree, CorpusTextAndProtobufGiveTheSameProgram) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    Result<Program> text = read_text(name);
    ASSERT_TRUE(text.is_ok()) << text.status().to_string();
    Result<Program> proto = read_proto(name);
    ASSERT_TRUE(proto.is_ok()) << proto.status().to_string();
    EXPECT_EQ(text->source, SourceFormat::kMilText);
    EXPECT_EQ(proto->source, SourceFormat::kProtobuf);

    // Spelled out before the dump comparison: names, opsets, op count.
    ASSERT_EQ(text->functions.size(), proto->functions.size());
    for (size_t i = 0; i < text->functions.size(); ++i) {
      EXPECT_EQ(text->functions[i].name, proto->functions[i].name);
      EXPECT_EQ(text->functions[i].opset, proto->functions[i].opset);
      EXPECT_EQ(text->functions[i].block.ops.size(), proto->functions[i].block.ops.size());
      EXPECT_GT(proto->functions[i].block.ops.size(), 100u);
    }

    normalise(*text, *proto);
    const std::string a = testing::dump_program(*text);
    const std::string b = testing::dump_program(*proto);
    EXPECT_TRUE(a == b) << first_difference(a, b);
  }
}

}  // namespace
}  // namespace sg
