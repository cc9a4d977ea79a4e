// Reports of the precision advice (`golden-validator advise`, advise.h): JSON (schema
// reports/schema/advice.schema.json, the shared envelope), terminal table, Markdown and JUnit.
#pragma once

#include "shardgate/advise.h"
#include "shardgate/report_envelope.h"

#include <string>

namespace sg {

ReportEnvelope advice_report_envelope(const AdviceResult& r);
std::string advice_report_json(const AdviceResult& r);
std::string advice_report_table(const AdviceResult& r, bool all);
std::string advice_report_markdown(const AdviceResult& r);
// One <testcase> per chosen weight and one for the verdict; no set found is a <failure>.
std::string advice_report_junit(const AdviceResult& r);

}  // namespace sg
