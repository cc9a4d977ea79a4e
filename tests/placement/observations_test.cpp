// The evaluation of the predictor against public observations from Macs
// (tests/data/placement/observations/, made by tests/generators/make_placement_observations.py).
// Prints the table (run: build/tests/test_placement --gtest_filter='Observations.*'), and holds
// the agreement: >= 85 % of op rows, >= 80 % of model rows, and no model observed off the
// Neural Engine gets a plain pass.
//
// Scoring: a prediction of ANE agrees with an observed "ane", CPU / GPU with an observed "off".
// ANE_RISK (a model verdict "at risk") is the sanctioned answer only where the evaluation set's
// own entries contradict each other on that row: observations.json marks such rows
// (`sources_disagree` on an op row, `model_sources_disagree` on a case) with the entries and
// why, and only there it counts as agreeing ("hedged"). Every other ANE_RISK / at-risk answer,
// and UNKNOWN, is a miss. Models built at the observed size with all-zero weights are committed
// without their weight file (zero_filled.h writes it back as a sparse file).
#include "placement/zero_filled.h"
#include "shardgate/placement.h"
#include "shardgate/io.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <set>

namespace sg {
namespace {

const std::string kDir = SG_TEST_DATA_DIR "/placement/observations/";

enum class Score { kAgree, kHedged, kMiss };
const char* score_name(Score s) {
  return s == Score::kAgree ? "agree" : s == Score::kHedged ? "hedged" : "MISS";
}

// `disagree`: the row is marked "sources disagree" in observations.json.
Score score_op(Placement p, const std::string& observed, bool disagree) {
  if (p == Placement::kANERisk) return disagree ? Score::kHedged : Score::kMiss;
  if (observed == "ane") return p == Placement::kANE ? Score::kAgree : Score::kMiss;
  return placement_is_fallback(p) ? Score::kAgree : Score::kMiss;
}

Score score_model(ModelVerdict v, const std::string& observed, bool disagree) {
  if (v == ModelVerdict::kAtRisk) return disagree ? Score::kHedged : Score::kMiss;
  if (observed == "ane") return v == ModelVerdict::kPass ? Score::kAgree : Score::kMiss;
  return v == ModelVerdict::kFail ? Score::kAgree : Score::kMiss;
}

// A "sources disagree" mark names at least two entries of the set (reproduced or not) and why.
bool disagreement_mark(const nlohmann::json& mark, const std::set<int>& entries, std::string& why) {
  if (!mark.is_object()) return false;
  const auto& ids = mark.at("entries");
  EXPECT_GE(ids.size(), 2u) << mark.dump();
  for (const auto& id : ids) {
    EXPECT_TRUE(entries.count(id.get<int>())) << "sources_disagree names entry " << id << ", not in the set";
  }
  why = mark.at("why").get<std::string>();
  EXPECT_FALSE(why.empty());
  return true;
}

struct Tally {
  int rows = 0, agree = 0, hedged = 0, miss = 0;
  void add(Score s) {
    ++rows;
    (s == Score::kAgree ? agree : s == Score::kHedged ? hedged : miss)++;
  }
  double pct() const { return rows ? 100.0 * (agree + hedged) / rows : 0.0; }
  double exact_pct() const { return rows ? 100.0 * agree / rows : 0.0; }
};

struct Evaluation {
  Tally ops, models;
  std::vector<std::string> plain_pass_off_ane;  // models observed off the NE given a pass
  std::vector<std::string> defaults;            // ops that fell to DEFAULT
  std::string table;
};

Evaluation evaluate() {
  Evaluation ev;
  auto text = read_file(kDir + "observations.json");
  EXPECT_TRUE(text.is_ok());
  if (!text.is_ok()) return ev;
  nlohmann::json doc = nlohmann::json::parse(*text);
  test::ZeroFilledCopies copies{"observations"};
  std::set<int> entry_ids;
  for (const auto& e : doc["entries"]) entry_ids.insert(e["entry"].get<int>());
  for (const auto& e : doc["not_reproduced"]) entry_ids.insert(e["entry"].get<int>());
  ev.table += fmt::format("{:<5} {:<34} {:<7} {:<44} {:<5} {:<34} {}\n", "entry", "model", "grain",
                          "ops / model", "obs", "predicted (rules)", "result");
  for (const auto& entry : doc["entries"]) {
    const int id = entry["entry"].get<int>();
    for (const auto& c : entry["cases"]) {
      const std::string model = c["model"].get<std::string>();
      const std::string path =
          test::materialize_package(kDir + model, "observations").string();
      ShardCheck check = check_shard(path, ShardCheckOptions{});
      EXPECT_FALSE(check.error) << model << ": " << check.error->to_string();
      if (check.error) continue;
      for (const OpPlacement& op : check.ops) {
        if (op.rule_id == "DEFAULT") ev.defaults.push_back(model + ": " + op.type);
      }
      const std::string short_name = model.substr(0, model.size() - std::string(".mlpackage").size());
      for (const auto& sel : c["ops"]) {
        const std::string type = sel["type"].get<std::string>();
        const std::string observed = sel["observed"].get<std::string>();
        const std::string contains = sel.value("output_contains", "");
        std::string why;
        const bool disagree =
            sel.contains("sources_disagree") && disagreement_mark(sel["sources_disagree"], entry_ids, why);
        Score row = Score::kAgree;
        std::map<std::string, int> predicted;
        int matched = 0;
        for (const OpPlacement& op : check.ops) {
          if (op.type != type || op.op_class != OpClass::kCompute) continue;
          if (!contains.empty() && (op.outputs.empty() || op.outputs[0].find(contains) == std::string::npos)) {
            continue;
          }
          ++matched;
          std::string rule = op.overlay_rule.empty() ? op.rule_id : op.rule_id + "+" + op.overlay_rule;
          predicted[fmt::format("{} {}", placement_name(op.placement), rule)]++;
          Score s = score_op(op.placement, observed, disagree);
          if (s == Score::kMiss || (s == Score::kHedged && row == Score::kAgree)) row = s;
        }
        EXPECT_GT(matched, 0) << model << ": no compute op " << type << " '" << contains << "'";
        if (matched == 0) continue;
        std::string pred;
        for (const auto& [k, n] : predicted) pred += (pred.empty() ? "" : ", ") + fmt::format("{} x{}", k, n);
        ev.ops.add(row);
        ev.table += fmt::format("{:<5} {:<34} {:<7} {:<44} {:<5} {:<34} {}\n", id, short_name, "op",
                                type + (contains.empty() ? "" : " '" + contains + "'"), observed, pred,
                                row == Score::kHedged ? "hedged (sources disagree)" : score_name(row));
      }
      if (c["observed_model"].is_string()) {
        const std::string observed = c["observed_model"].get<std::string>();
        std::string why;
        const bool disagree = c.contains("model_sources_disagree") &&
                              disagreement_mark(c["model_sources_disagree"], entry_ids, why);
        Score s = score_model(check.model_verdict, observed, disagree);
        ev.models.add(s);
        if (observed == "off" && check.model_verdict == ModelVerdict::kPass) {
          ev.plain_pass_off_ane.push_back(model);
        }
        const ResidencySummary& m = check.summary;
        ev.table += fmt::format(
            "{:<5} {:<34} {:<7} {:<44} {:<5} {:<34} {}\n", id, short_name, "model",
            fmt::format("ANE {}, at risk {}, off {}, casts {}", m.body_ane, m.body_at_risk,
                        m.body_off_ane, m.boundary_casts),
            observed, model_verdict_name(check.model_verdict),
            s == Score::kHedged ? "hedged (sources disagree)" : score_name(s));
      }
    }
  }
  for (const auto& n : doc["not_reproduced"]) {
    ev.table += fmt::format("{:<5} not reproduced: {}\n", n["entry"].get<int>(), n["why"].get<std::string>());
  }
  ev.table += fmt::format(
      "op rows: {} agree + {} hedged where sources disagree of {} = {:.1f}% ({:.1f}% exact), {} missed\n"
      "model rows: {} agree + {} hedged where sources disagree of {} = {:.1f}% ({:.1f}% exact), {} missed\n",
      ev.ops.agree, ev.ops.hedged, ev.ops.rows, ev.ops.pct(), ev.ops.exact_pct(), ev.ops.miss,
      ev.models.agree, ev.models.hedged, ev.models.rows, ev.models.pct(), ev.models.exact_pct(),
      ev.models.miss);
  return ev;
}

TEST(Observations, AgreementTable) {
  Evaluation ev = evaluate();
  std::cout << ev.table;
  EXPECT_GE(ev.ops.rows, 40);
  EXPECT_GE(ev.models.rows, 14);
  EXPECT_GE(ev.ops.pct(), 85.0);
  EXPECT_GE(ev.models.pct(), 80.0);
  // Risk is accepted only on the rows marked "sources disagree": a table answering ANE_RISK
  // everywhere would agree on those rows only (measured: see runtime/placement/README.md).
  EXPECT_TRUE(ev.plain_pass_off_ane.empty())
      << "observed off the Neural Engine but predicted pass: " << ev.plain_pass_off_ane.front();
  EXPECT_TRUE(ev.defaults.empty()) << "an op of a reproduction falls to DEFAULT: " << ev.defaults.front();
}

}  // namespace
}  // namespace sg
