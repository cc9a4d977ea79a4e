#include "common/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace sg::cli {

namespace {
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string human_seconds(double s) {
  if (!std::isfinite(s) || s < 0) s = 0;
  if (s < 60) return fmt::format("{:.1f} s", s);
  const auto whole = static_cast<int64_t>(std::llround(s));
  if (whole < 3600) return fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return fmt::format("{} h {:02} min", whole / 3600, (whole % 3600) / 60);
}

bool stderr_is_terminal() { return ::isatty(::fileno(stderr)) != 0; }

int stderr_columns() {
  struct winsize ws {};
  if (::ioctl(::fileno(stderr), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

Progress::Progress(std::ostream& out, int64_t total, int level, bool live, Clock clock, int width)
    : out_(out),
      total_(total),
      level_(level),
      live_(live && level >= 0),
      width_(live_ && width < 0 ? stderr_columns() : width),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      start_(clock_()) {}

Progress::~Progress() { finish(); }

std::string Progress::live_text(std::string_view what) const {
  const double elapsed = clock_() - start_;
  std::string text = fmt::format("[{}/{}] {} elapsed", finished_, total_, human_seconds(elapsed));
  // Time left from the mean time per finished item so far (no estimate before the first).
  if (finished_ > 0 && finished_ < total_) {
    const double left = elapsed / static_cast<double>(finished_) * static_cast<double>(total_ - finished_);
    text += fmt::format(", ~{} left", human_seconds(left));
  }
  text += fmt::format(": {}", what);
  // A line wider than the terminal wraps, and \r would then redraw only its last part: the
  // name at the end is cut instead of the counts at the front.
  if (width_ > 1 && text.size() >= static_cast<size_t>(width_)) text.resize(static_cast<size_t>(width_ - 1));
  return text;
}

void Progress::done(std::string_view what, std::string_view detail) {
  ++finished_;
  if (live_) {
    // \r returns to the line start, \x1b[K erases what a longer earlier text left behind.
    out_ << '\r' << live_text(what) << "\x1b[K" << std::flush;
    drawn_ = true;
  }
  if (level_ >= 1) {
    if (drawn_) out_ << "\r\x1b[K";
    out_ << fmt::format("  [{}/{}] {}{}{}\n", finished_, total_, what, detail.empty() ? "" : "  ", detail);
    if (live_) out_ << '\r' << live_text(what) << "\x1b[K" << std::flush;
  }
}

void Progress::finish() {
  if (drawn_) out_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

}  // namespace sg::cli
