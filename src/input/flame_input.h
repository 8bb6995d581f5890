// Every input `aiflame report` and `aiflame diff` read, told apart by content (never by name):
// aiflame profiles, folded stacks (plain or annotated, as aiflame, flamegraph.pl's stackcollapse
// scripts and iaprof write them) and iaprof's text output. Gzip'd text is read as well. The text
// inputs are read here; aiflame profiles are attributed on their way to a picture
// (report/load_flame.h reads every kind).
#pragma once
#include <string>
#include <string_view>

#include "flame/flame_data.h"
#include "util/result.h"

namespace aiflame {

enum class InputFormat { Aiflame, Folded, Iaprof, Unknown };
std::string_view input_format_name(InputFormat f);

// The format of a file's (decompressed) bytes.
InputFormat detect_input_format(std::string_view bytes);

// The file's bytes, gunzipped when they start with gzip's magic. Errors name the file.
Result<std::string> read_input_bytes(const std::string& path);

// The format of a file's content, for callers that handle aiflame profiles their own way.
Result<InputFormat> detect_file_format(const std::string& path);

// A flame graph from a text input (folded stacks, iaprof output), read as it is. Errors are one line
// naming the file (an aiflame profile's bytes are one too).
Result<FlameData> read_text_flame(const std::string& path);

// The same from bytes already read; `name` is used in errors.
Result<FlameData> parse_flame_input(const std::string& bytes, const std::string& name);

}  // namespace aiflame
