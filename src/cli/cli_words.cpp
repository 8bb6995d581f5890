#include "cli/cli_words.h"

#include <algorithm>

namespace aiflame {

namespace {

bool looks_like_option(const std::string& w) { return w.size() > 1 && w[0] == '-' && w != "--"; }

// The option a word names (its value cut at '=', a short one's attached value left out), or nullptr.
const CLI::Option* option_of(const CLI::App& sub, const std::string& w, bool* attached) {
  *attached = false;
  if (w.rfind("--", 0) == 0) {
    size_t eq = w.find('=');
    *attached = eq != std::string::npos;
    return sub.get_option_no_throw(w.substr(0, eq));
  }
  const CLI::Option* o = sub.get_option_no_throw(w.substr(0, 2));
  *attached = o && w.size() > 2;  // -ofile; or flags run together (-fq), which take no value anyway
  return o;
}

bool takes_value(const CLI::Option* o) { return o->get_type_size_max() > 0 && o->get_items_expected_max() > 0; }

}  // namespace

std::vector<std::string> with_command_separator(const CLI::App& sub, const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); i++) {
    const std::string& w = words[i];
    if (w == "--") {
      out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
      return out;
    }
    if (!looks_like_option(w)) {  // the command: it and everything after it are the program's
      out.push_back("--");
      out.insert(out.end(), words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
      return out;
    }
    out.push_back(w);
    bool attached = false;
    const CLI::Option* o = option_of(sub, w, &attached);
    if (o && takes_value(o) && !attached && i + 1 < words.size()) out.push_back(words[++i]);
  }
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  // Damerau-Levenshtein (optimal string alignment), three rows.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) prev[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[b.size()];
}

std::string unknown_option_message(const CLI::App& sub, const std::vector<std::string>& words) {
  for (size_t i = 0; i < words.size(); i++) {
    const std::string& w = words[i];
    if (w == "--") break;
    if (!looks_like_option(w)) continue;
    bool attached = false;
    const CLI::Option* o = option_of(sub, w, &attached);
    if (o) {
      if (takes_value(o) && !attached) i++;  // its value may look like anything
      continue;
    }
    const std::string name = w.substr(0, w.find('='));
    // The nearest long name, if it is near: within a third of the word (a typo, not another word).
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const CLI::Option* opt : sub.get_options())
      for (const std::string& l : opt->get_lnames()) {
        size_t d = edit_distance(name, "--" + l);
        if (d < best_d) best_d = d, best = "--" + l;
      }
    std::string msg = "unknown option '" + name + "' for `" + sub.get_name() + "`";
    if (!best.empty() && best_d <= std::max<size_t>(2, name.size() / 3)) msg += " (did you mean " + best + "?)";
    return msg;
  }
  return {};
}

}  // namespace aiflame
