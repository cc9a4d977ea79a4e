#include "common/help_text.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>

namespace sg::cli {
namespace {

struct CommandHelp {
  std::string_view command;
  // What exit 0 and 1 mean for this command (2 and 3 mean the same everywhere).
  std::string_view exit0, exit1;
  std::string_view example1, example2;
};

constexpr std::string_view kGateExit0 = "the gate passed";
constexpr std::string_view kGateExit1 = "the gate failed";

constexpr std::array kHelp = {
    CommandHelp{"golden-validator", "the gate passed (see each subcommand's --help)",
                "the gate failed",
                "golden-validator run goldens/sample/chains/chain_lut4.json --both",
                "golden-validator compare --candidate device_dump/ --reference goldens/ --json -"},
    CommandHelp{"ane-validator", "every shard passed its residency gate",
                "a shard failed its gate (an op off the ANE, residency under the minimum, a check)",
                "ane-validator 'goldens/sample/shards/**/L*_attn_lut4.mlpackage' --markdown -",
                "ane-validator model.mlpackage --plan model.mlpackage.json --ops --json report.json"},
    CommandHelp{"compare", kGateExit0, kGateExit1,
                "golden-validator compare --candidate device_dump/ --reference goldens/ --strict",
                "golden-validator compare --candidate cand.safetensors --reference ref/ --json -"},
    CommandHelp{"regate", kGateExit0, kGateExit1,
                "golden-validator regate report.json --min-cosine 0.99",
                "golden-validator regate report.json --gate gates/fidelity.json --json regated.json"},
    CommandHelp{"probe", kGateExit0, kGateExit1,
                "golden-validator probe 'goldens/sample/shards/*_lut4.mlpackage' --baseline-replace _lut4=_fp16",
                "golden-validator probe q.mlpackage --baseline fp16.mlpackage --seeds 5 --json -"},
    CommandHelp{"run", kGateExit0, kGateExit1,
                "golden-validator run goldens/sample/chains/chain_lut4.json --both",
                "golden-validator run chain.json --teacher-forced --json report.json --html report.html"},
    CommandHelp{"record", "the golden dumps were written", "(not used)",
                "golden-validator record goldens/sample/chains/chain_fp16.json --out /tmp/goldens",
                "golden-validator record chain.json --out goldens/ --precision fp32"},
    CommandHelp{"exec", "every value was finite",
                "a NaN/Inf was produced (even when later ops washed it out)",
                "golden-validator exec goldens/sample/shards/L0_attn_fp16.mlpackage --seed 1 --out /tmp/o",
                "golden-validator exec shard.mlpackage --input x=x.npy --capture attn_out --profile"},
    CommandHelp{"weights", "no weight was flagged", "a weight was flagged (e.g. an outlier-set scale), or no shard has a compressed weight (nothing checked)",
                "golden-validator weights goldens/sample/shards/L0_moe_p0_int8.mlpackage",
                "golden-validator weights 'shards/*_int8.mlpackage' --baseline-replace _int8=_fp16 --json -"},
    CommandHelp{"culprits", "the search ran (whatever it found: a diagnosis, not a gate)", "(not used)",
                "golden-validator culprits goldens/sample/shards/L0_moe_p0_int8.mlpackage --baseline-replace _int8=_fp16",
                "golden-validator culprits q.mlpackage --baseline fp16.mlpackage --inputs-from chain.json --json -"},
    CommandHelp{"advise", "a passing set of weights to keep at fp16 was found (or the chain passes already)",
                "no passing set was found within --max-runs",
                "golden-validator advise goldens/sample/chains/chain_int8.json --baseline-replace _int8=_fp16",
                "golden-validator advise chain.json --baseline-replace _int8=_fp16 --both --json advice.json"},
    CommandHelp{"merge", "the merged run passed its gate (or every slice was empty)",
                "the merged run failed its gate",
                "golden-validator merge slices/run_*.json --json run.json --html run.html",
                "golden-validator merge ane_0.json ane_1.json ane_2.json --markdown -"},
    CommandHelp{"diff", "no regression beyond the tolerances",
                "a regression beyond the tolerances (gates/regression.json)",
                "golden-validator diff old.json new.json --gate gates/regression.json",
                "golden-validator diff new.json --gate my-regression.json   # against the baseline it names"},
};

// CLI11 writes a positional that takes 2 to N values as "NAME(Kx)" in the usage line
// ("reports(1x)" for diff's [OLD.json] NEW.json), which reads as a typo; such a positional is
// written by its option text instead. Positionals of one value or of any number keep CLI11's
// form.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_option_usage(const CLI::Option* opt) const override {
    const int max = opt->get_expected_max();
    if (max > 1 && max < CLI::detail::expected_max_vector_size && !opt->get_option_text().empty()) {
      return opt->get_required() ? opt->get_option_text() : "[" + opt->get_option_text() + "]";
    }
    return CLI::Formatter::make_option_usage(opt);
  }
};

}  // namespace

std::string help_footer(std::string_view command) {
  for (const CommandHelp& h : kHelp) {
    if (h.command != command) continue;
    return fmt::format(
        "\nExit codes:\n  0  {}\n  1  {}\n  2  bad input or usage (the message names the file "
        "and the place)\n  3  internal error (a bug in shardgate)\n\nExamples:\n  {}\n  {}\n",
        h.exit0, h.exit1, h.example1, h.example2);
  }
  return "";
}

Status apply_help_footers(CLI::App& app, std::string_view tool) {
  auto set = [](CLI::App& a, std::string_view command) -> Status {
    const std::string footer = help_footer(command);
    if (footer.empty()) {
      return Status(ErrorCode::kInternal, fmt::format("no --help footer for '{}'", command));
    }
    a.footer(footer);
    a.formatter(std::make_shared<UsageFormatter>());
    return Status::ok();
  };
  if (Status s = set(app, tool); !s.is_ok()) return s;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (Status s = set(*sub, sub->get_name()); !s.is_ok()) return s;
  }
  return Status::ok();
}

}  // namespace sg::cli
