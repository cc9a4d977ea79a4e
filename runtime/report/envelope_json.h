// The JSON side of the report envelope (shardgate/report_envelope.h): the writers of every
// report start their document with envelope_json(), and the readers (merge, regate, diff)
// check it with read_envelope() before reading the rest.
#pragma once

#include "shardgate/report_envelope.h"

#include "core/json.h"

namespace sg {

// The envelope's fields, in the documented order; the caller appends the report's own fields.
json_util::OrderedJson envelope_json(const ReportEnvelope& envelope);

// The envelope of a parsed report (kFormat naming `path` and the field).
Result<ReportEnvelope> read_envelope(const json_util::Json& root, const std::string& path);

// read_envelope(), and the report must be of `kind` at `version` written by `tool`: the message
// names what the file is instead ("... is a golden-report@2 of golden-validator").
Result<ReportEnvelope> read_envelope_of(const json_util::Json& root, const std::string& path,
                                        std::string_view kind, int version,
                                        std::string_view tool);

}  // namespace sg
