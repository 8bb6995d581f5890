// libFuzzer: the duty-cycle parsers: `record --duty W/P` (parse_duty_spec, parse_duration_ms) and
// `report --since/--until` (parse_time_bound). The input is two lines: a duty and a bound. A value
// they do not take is false or one error; never a crash, and what they take is in range.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cli/time_span.h"
#include "record/duty_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view duty = in.substr(0, nl), bound = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  aiflame::DutySpec d;
  if (aiflame::parse_duty_spec(duty, &d) && d.period_ms && (d.window_ms < 100 || d.period_ms < 2 * d.window_ms))
    std::abort();
  double ms = 0;
  if (aiflame::parse_duration_ms(bound, &ms) && !(ms >= 0 && ms < 1e15)) std::abort();
  auto b = aiflame::parse_time_bound(bound);
  if (b && b->kind == aiflame::TimeBound::None && !bound.empty()) std::abort();
  return 0;
}
