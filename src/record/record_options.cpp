#include "record/record_options.h"

#include "record/duty_spec.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace aiflame {
namespace {

// "0", "no", "off", "false" turn a switch off; "1", "yes", "on", "true" turn it on.
bool parse_flag(std::string_view v, bool* out) {
  for (const char* s : {"0", "no", "off", "false"})
    if (v == s) return *out = false, true;
  for (const char* s : {"1", "yes", "on", "true"})
    if (v == s) return *out = true, true;
  return false;
}

bool parse_uint(std::string_view v, uint32_t lo, uint32_t hi, uint32_t* out) {
  unsigned long x = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi) return false;
  *out = static_cast<uint32_t>(x);
  return true;
}

#define UINT_OPTION(field, lo, hi) [](RecordOptions& o, std::string_view v) { return parse_uint(v, lo, hi, &o.field); }
#define FLAG_OPTION(field) [](RecordOptions& o, std::string_view v) { return parse_flag(v, &o.field); }

// The schema. CUPTI's own limits and aiflame's measured defaults are explained where they are used.
constexpr RecordOptionSpec kSchema[] = {
    {"output", "AIFLAME_OUTPUT", nullptr, nullptr, "a path", "Profile file to write (the library writes FILE.<pid>)",
     [](RecordOptions& o, std::string_view v) { return !v.empty() && (o.output = v, true); }},
    {"period", "AIFLAME_PERIOD", "--period", nullptr, "N in 5..31 (2^N cycles) or 'default'",
     "GPU sampling period as 2^N cycles, N in 5..31 (default 22), or 'default' for CUPTI's own period. Finer "
     "periods take a larger pinned sample buffer per GPU: 32 MiB from 17 up, doubling per step below to 512 MiB at 13",
     [](RecordOptions& o, std::string_view v) {
       if (v == "default") return o.period_log2 = 0, true;
       return parse_uint(v, 5, 31, &o.period_log2);
     }},
    {"interval_ms", "AIFLAME_INTERVAL_MS", "--interval", nullptr, "milliseconds in 1..10000",
     "Milliseconds between drains of the GPU sample buffer (default 10)", UINT_OPTION(interval_ms, 1, 10000)},
    {"unwind", "AIFLAME_UNWIND", "--unwind", nullptr, "'sampled', 'always' or 'off'",
     "Native stack unwinding at launches: 'always' (every launch, ~0.4 us: CFI tables and frame pointers; "
     "the default), 'sampled' (the same as always; kept for old scripts), 'off' (Python frames only)",
     [](RecordOptions& o, std::string_view v) {
       if (v == "sampled") o.unwind = UnwindPolicy::Sampled;
       else if (v == "always") o.unwind = UnwindPolicy::Always;
       else if (v == "off") o.unwind = UnwindPolicy::Off;
       else return false;
       return true;
     }},
    {"unstable_sample", "AIFLAME_UNSTABLE_SAMPLE", nullptr, nullptr, "N in 1..1048576",
     "Launch sites still unstable after refining: unwind one launch in N", UINT_OPTION(unstable_sample, 1, 1u << 20)},
    {"python", "AIFLAME_PYTHON", "--no-python", "0", "0 or 1", "Do not read Python frames at launches",
     FLAG_OPTION(python)},
    {"keep_cubins", "AIFLAME_CUBINS", "--no-cubins", "0", "0 or 1",
     "Do not keep GPU code objects (smaller file; no GPU source lines later)", FLAG_OPTION(keep_cubins)},
    {"pc_sampling", "AIFLAME_PC_SAMPLING", "--no-pc-sampling", "0", "0 or 1",
     "Record launches and kernel times only, no GPU samples. For programs that launch short "
     "kernels on several streams from several threads: CUPTI's PC sampling runs those one at "
     "a time",
     FLAG_OPTION(pc_sampling)},
    {"pc_mode", "AIFLAME_PC_MODE", "--pc-mode", nullptr, "'continuous' or 'windows'",
     "How GPU samples are taken: 'continuous' (the default: sampling, kernel records and launch stacks all "
     "the time; samples carry no launch id and are split over a kernel's executions by time) or 'windows' "
     "(experimental, refused unless AIFLAME_EXPERIMENTAL=1: sampling only inside windows of up to "
     "--window-launches launches, about 2% of the run, every sample with its launch's id; it can stall "
     "programs that launch from several threads). See docs/attribution.md",
     [](RecordOptions& o, std::string_view v) {
       if (v == "continuous") o.pc_mode = PcMode::Continuous;
       else if (v == "windows") o.pc_mode = PcMode::Windows;
       else return false;
       return true;
     }},
    {"windows_per_s", "AIFLAME_WINDOWS_PER_S", "--windows-per-sec", nullptr, "N in 1..10000",
     "Windows mode: the most sampling windows a second (default 100; the 2% budget usually spaces them further)", UINT_OPTION(windows_per_s, 1, 10000)},
    {"window_us", "AIFLAME_WINDOW_US", "--window-us", nullptr, "microseconds in 10..10000000",
     "Windows mode: the longest a window lasts, in microseconds (default 300000)", UINT_OPTION(window_us, 10, 10000000)},
    {"window_launches", "AIFLAME_WINDOW_LAUNCHES", "--window-launches", nullptr, "N in 1..100000",
     "Windows mode: a window closes after this many launches of the thread that opened it, or after "
     "--window-us, whichever comes first (default 100)",
     UINT_OPTION(window_launches, 1, 100000)},
    {"window_budget_permille", "AIFLAME_WINDOW_BUDGET_PERMILLE", nullptr, nullptr, "N in 0..1000",
     "Windows mode: the share of the run (in 1/1000) that windows may take; 0: windows at a fixed rate",
     UINT_OPTION(window_budget_permille, 0, 1000)},
    {"kernel_activity", "AIFLAME_ACTIVITY", nullptr, nullptr, "0 or 1", "Record kernel execution records",
     FLAG_OPTION(kernel_activity)},
    {"autograd", "AIFLAME_AUTOGRAD", nullptr, nullptr, "0 or 1",
     "Track PyTorch's autograd, so that backward kernels sit under the forward code that made their nodes "
     "(0: off, as before the tracking)",
     FLAG_OPTION(autograd)},
    {"quiet", "AIFLAME_QUIET", "-q,--quiet", "1", "0 or 1", "Print only errors", FLAG_OPTION(quiet)},
    {"cupti", "AIFLAME_CUPTI", nullptr, nullptr, "a path", "The libcupti to load (the only one tried)",
     [](RecordOptions& o, std::string_view v) { return o.cupti_path = v, true; }},
    // Duty-cycled recording (record/duty_spec.h, docs/always_on.md).
    {"duty", "AIFLAME_DUTY", "--duty", nullptr, "'on', 'off' or WINDOW/PERIOD such as 2s/60s",
     "Record in windows of WINDOW every PERIOD, detached from CUPTI between them so that the program runs at its "
     "own speed there ('on': 1s/90s). -o is then a directory that holds one profile per window; `aiflame report "
     "DIR` merges them (--since/--until pick a span)",
     [](RecordOptions& o, std::string_view v) {
       DutySpec d;
       if (!parse_duty_spec(v, &d)) return false;
       o.duty_window_ms = d.window_ms;
       o.duty_period_ms = d.period_ms;
       return true;
     }},
    {"duty_keep", "AIFLAME_DUTY_KEEP", "--duty-keep", nullptr, "N in 0..1000000",
     "With --duty: keep the newest N window profiles of each process, deleting older ones (default 100; 0: no limit)",
     UINT_OPTION(duty_keep, 0, 1000000)},
    {"duty_max_mb", "AIFLAME_DUTY_MAX_MB", "--duty-max-mb", nullptr, "MB in 0..10000000",
     "With --duty: delete the oldest window profiles of each process past this many MB together (default 2048; 0: "
     "no limit)",
     UINT_OPTION(duty_max_mb, 0, 10000000)},
};

// The lab's switches: measurements and CUPTI experiments, set by name in AIFLAME_LAB.
constexpr RecordOptionSpec kLabSchema[] = {
    {"activity_buffer_mb", "AIFLAME_LAB", nullptr, nullptr, "MB in 1..4096",
     "Host buffer for kernel records", UINT_OPTION(measure.activity_buffer_mb, 1, 4096)},
    {"device_buffer_mb", "AIFLAME_LAB", nullptr, nullptr, "MB in 1..4096",
     "Device buffer for kernel records", UINT_OPTION(measure.device_buffer_mb, 1, 4096)},
    {"activity_zeroed", "AIFLAME_LAB", nullptr, nullptr, "0 or 1", "Kernel-record buffers handed over zeroed",
     FLAG_OPTION(measure.activity_zeroed)},
    {"activity_flush_every", "AIFLAME_LAB", nullptr, nullptr, "N in 0..1048576",
     "Flush kernel records every N drains (0: never)", UINT_OPTION(measure.activity_flush_every, 0, 1u << 20)},
    {"skip_launches", "AIFLAME_LAB", nullptr, nullptr, "0, 1 or 2",
     "What the launch callback skips (1: everything, 2: all after the timestamp and context lookup)",
     UINT_OPTION(measure.skip_launches, 0, 2)},
    {"stall_config", "AIFLAME_LAB", nullptr, nullptr, "0 or 1", "Configure CUPTI's stall-reason list",
     FLAG_OPTION(measure.stall_config)},
    {"sleep_span_ms", "AIFLAME_LAB", nullptr, nullptr, "milliseconds in 0..10000",
     "CUPTI's decode-thread sleep span (0: CUPTI's default)", UINT_OPTION(measure.sleep_span_ms, 0, 10000)},
    {"free_names", "AIFLAME_LAB", nullptr, nullptr, "0 or 1", "Free CUPTI's function-name strings at exit",
     FLAG_OPTION(measure.free_names)},
    {"win_toggle_callbacks", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: launch callbacks on only around windows", FLAG_OPTION(measure.win_toggle_callbacks)},
    {"win_toggle_activity", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: kernel records on only inside windows", FLAG_OPTION(measure.win_toggle_activity)},
    {"win_disable_between", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: PC sampling disabled between windows (hung gpt_train.py on the H100)",
     FLAG_OPTION(measure.win_disable_between)},
    {"hw_buffer_mb", "AIFLAME_LAB", nullptr, nullptr, "MB in 0..4096",
     "Windows mode: CUPTI's hardware buffer for samples (0: CUPTI's default)", UINT_OPTION(measure.hw_buffer_mb, 0, 4096)},
    {"continuous_hw_buffer_mb", "AIFLAME_LAB", nullptr, nullptr, "MB in 0..4096",
     "Continuous mode: CUPTI's hardware buffer for samples (0: sized by --period and --interval, 32-512 MiB)",
     UINT_OPTION(measure.continuous_hw_buffer_mb, 0, 4096)},
    {"win_prime", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: pay CUPTI's one-time sampling start when a context is created", FLAG_OPTION(measure.win_prime)},
    {"win_never", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: never open a window (what sampling costs while stopped)", FLAG_OPTION(measure.win_never)},
    {"win_never_nocb", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode with AIFLAME_LAB=win_never: launch callbacks off too (enabled PC sampling alone)",
     FLAG_OPTION(measure.win_never_nocb)},
    {"win_continuous", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: CUPTI's continuous collection mode with start/stop control (samples without launch ids)",
     FLAG_OPTION(measure.win_continuous)},
    {"win_trace", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: a timestamped stderr line for each phase of every window and each wait of another thread",
     FLAG_OPTION(measure.win_trace)},
    {"win_charge_sync", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Windows mode: the wait for the GPU's queue before a window counts in its cost (the budget)",
     FLAG_OPTION(measure.win_charge_sync)},
    {"win_skip_max", "AIFLAME_LAB", nullptr, nullptr, "N in 0..1048576",
     "Windows mode: a due window opens K launches after the first, K uniform in [0, N)",
     UINT_OPTION(measure.win_skip_max, 0, 1u << 20)},
    {"capture_stats", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Time each part of the launch path; print the breakdown at the end", FLAG_OPTION(measure.capture_stats)},
    {"verify_memos", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Walk every frame again at each launch that took its memo and count launches whose stacks differ",
     FLAG_OPTION(measure.verify_memos)},
    {"launch_ab", "AIFLAME_LAB", nullptr, nullptr, "0 or 1",
     "Skip the whole launch path (no stack, no record) in random 6-8 ms slices; print its wall-time cost per launch at "
     "the end (a measurement: the skipped launches have no stack)",
     FLAG_OPTION(measure.launch_ab)},
    {"callback_ab", "AIFLAME_LAB", nullptr, nullptr, "0 to 15",
     "Switch CUPTI's launch callbacks (1), kernel records (2, without PC sampling) or both (3) off and on in random "
     "100-300 ms slices, or continuous PC sampling (4, with 1 and 2 as chosen: 7 switches all three) in 2-4 s "
     "slices, printing each switch's CLOCK_MONOTONIC time (a measurement with bench/callback_ab.py: the off slices' "
     "launches have no stack, no kernel record or no sample); +8 keeps the launch callbacks off throughout (12: "
     "sampling's cost with nothing else per launch)",
     UINT_OPTION(measure.callback_ab, 0, 15)},
    {"capture_probe", "AIFLAME_LAB", nullptr, nullptr, "0 to 4",
     "A measurement of the launch path with its caches cold and warm: 1, before each launch load the stack lines its "
     "likely memo's check reads, twice, timing each round (it warms those lines for the capture); 2, after each "
     "launch run the autograd tracking's reads, the Python walk and the capture again at once, timing each against "
     "its first run; 3, count each launch's time in the launch path into a histogram (2 does as well); 4, before "
     "each launch time eight thread-local accesses and eight global ones, each twice; print the figures at the end "
     "(quantiles, and the share of the time in launches of 2 us or more)",
     UINT_OPTION(measure.capture_probe, 0, 4)},
    {"autograd_ab", "AIFLAME_LAB", nullptr, nullptr, "0 to 5",
     "The autograd tracking (1), the capture's check of the predicted memo alone before its key's others (2), the "
     "reads of torch's thread-locals in place (3: its functions called instead), the reads of Python's "
     "initialized flag and thread state in place (4: its functions called instead), or the launch path without "
     "the measurements' branches (5: the measured path instead, with the capture's predicted memo checked inside "
     "its walk) skipped in every other 40-70 ms slice; print each kind's capture cost per launch at the end",
     UINT_OPTION(measure.autograd_ab, 0, 5)},
    {"autograd_light", "AIFLAME_LAB", nullptr, nullptr, "0, 1 or 2",
     "A measurement: the autograd tracking without its tables (1; backward kernels lose their forward code), nor "
     "its calls into torch (2)",
     UINT_OPTION(measure.autograd_light, 0, 2)},
};

#undef UINT_OPTION
#undef FLAG_OPTION

constexpr const char* kOtherVariables[] = {
    "AIFLAME_LIB",          "AIFLAME_EXPERIMENTAL",    "AIFLAME_DEBUG",     "AIFLAME_REPORT_THREADS",
    "AIFLAME_BIN",          "AIFLAME_UPDATE_GOLDEN",   "AIFLAME_RESOLVE",   "AIFLAME_REQUIRE_INTEROP",
    "AIFLAME_BENCH_SECONDS", "AIFLAME_BENCH_PROFILES", "AIFLAME_SERIALIZED", "AIFLAME_SKIP_SANITIZERS",
    "AIFLAME_SKIP_FUZZ",    "AIFLAME_FUZZ_SECONDS",    "AIFLAME_BENCH_EVICT_MIB", "AIFLAME_NO_INSTALL",
};

}  // namespace

std::span<const RecordOptionSpec> record_option_schema() { return kSchema; }
std::span<const RecordOptionSpec> lab_option_schema() { return kLabSchema; }
std::span<const char* const> other_aiflame_variables() { return kOtherVariables; }

const RecordOptionSpec* find_record_option(std::string_view name) {
  for (const auto& s : kSchema)
    if (name == s.name) return &s;
  return nullptr;
}

RecordOptions parse_record_options(const std::function<const char*(const char*)>& lookup,
                                   const std::vector<std::string>& names, std::vector<std::string>* warnings) {
  RecordOptions o;
  for (const auto& s : kSchema) {
    const char* v = lookup(s.env);
    if (!v || !*v) continue;
    RecordOptions trial = o;
    if (s.parse(trial, v)) {
      o = std::move(trial);
    } else if (warnings) {
      warnings->push_back(std::string(s.env) + "=" + v + " is not valid (it takes " + s.expected +
                          "); the default is used");
    }
  }
  // The lab's switches: AIFLAME_LAB=name[=value],... (a name alone: 1).
  if (const char* lab = lookup("AIFLAME_LAB"); lab && *lab) {
    std::string_view rest = lab;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string_view name = item.substr(0, eq), value = eq == std::string_view::npos ? "1" : item.substr(eq + 1);
      const RecordOptionSpec* spec = nullptr;
      for (const auto& l : kLabSchema)
        if (name == l.name) spec = &l;
      RecordOptions trial = o;
      if (!spec) {
        if (warnings) warnings->push_back("AIFLAME_LAB: " + std::string(name) + " is not a lab switch; it is ignored");
      } else if (spec->parse(trial, value)) {
        o = std::move(trial);
      } else if (warnings) {
        warnings->push_back("AIFLAME_LAB: " + std::string(item) + " is not valid (" + std::string(name) + " takes " +
                            spec->expected + "); the default is used");
      }
    }
  }
  // Windows mode has a period of its own unless one is asked for (record_options.h).
  if (o.pc_mode == PcMode::Windows) {
    const char* p = lookup("AIFLAME_PERIOD");
    if (!p || !*p) o.period_log2 = kWindowsPeriodLog2;
  }
  if (!warnings) return o;
  for (const auto& n : names) {
    if (!n.starts_with("AIFLAME_")) continue;
    bool known = false;
    for (const auto& s : kSchema) known |= n == s.env;
    for (const char* other : kOtherVariables) known |= n == other;
    known |= n == "AIFLAME_LAB";
    if (!known) {
      const char* v = lookup(n.c_str());
      warnings->push_back(n + "=" + (v ? v : "") + " is not an aiflame option; it is ignored");
    }
  }
  return o;
}

RecordOptions record_options_from_env(std::vector<std::string>* warnings) {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; e++) {
    std::string_view kv = *e;
    names.emplace_back(kv.substr(0, kv.find('=')));
  }
  return parse_record_options([](const char* name) { return std::getenv(name); }, names, warnings);
}

LauncherRanks launcher_ranks_from_env() {
  auto env_int = [](const char* name, int32_t dflt) {
    const char* v = std::getenv(name);
    return v && *v ? static_cast<int32_t>(std::atoi(v)) : dflt;
  };
  LauncherRanks r;
  r.rank = env_int("RANK", env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", -1)));
  r.local_rank = env_int("LOCAL_RANK", env_int("OMPI_COMM_WORLD_LOCAL_RANK", -1));
  r.world_size = env_int("WORLD_SIZE", env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 0)));
  return r;
}

}  // namespace aiflame
