// Progress of a long run (chain steps, shards), the same in both tools: on a terminal a live
// line on stderr ("[k/N] 12.0 s elapsed, ~30.1 s left: what"), rewritten in place, cut to the
// terminal's width and cleared at the end;
// off a terminal nothing unless -v, then one line per finished item with k/N. -q silences both.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace sg::cli {

class Progress {
 public:
  using Clock = std::function<double()>;  // seconds since an arbitrary origin

  // `level` is LogArgs::level(); `live` whether the stream is a terminal (see stderr_is_terminal).
  // `out` must outlive the object; `clock` defaults to the steady clock; `width` is the
  // terminal's columns (-1: ask stderr's terminal, 0: do not cut).
  Progress(std::ostream& out, int64_t total, int level, bool live, Clock clock = {}, int width = -1);
  ~Progress();  // clears the live line (the line the next message is printed on stays clean)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One item finished: `what` names it ("step L3.attn (L3_attn_lut4.mlpackage)"), `detail` is
  // the per-item figures a -v line carries (time, ops, memory).
  void done(std::string_view what, std::string_view detail = {});
  // Clears the live line now (before the caller prints its verdict).
  void finish();

  // "[k/N]" line texts, for tests and callers that print them elsewhere.
  std::string live_text(std::string_view what) const;

 private:
  std::ostream& out_;
  int64_t total_;
  int64_t finished_ = 0;
  int level_;
  bool live_;
  int width_;
  bool drawn_ = false;
  Clock clock_;
  double start_;
};

// Whether standard error is a terminal (a live progress line is drawn there), and its width in
// columns (0 when unknown).
bool stderr_is_terminal();
int stderr_columns();

// "12.3 s", "4 min 05 s", "1 h 02 min": a duration a person reads at a glance.
std::string human_seconds(double seconds);

}  // namespace sg::cli
