// Every input `aiflame report` and `aiflame diff` read, told apart by content (never by name):
// aiflame profiles, folded stacks (plain or annotated, as aiflame, flamegraph.pl's stackcollapse
// scripts and iaprof write them) and iaprof's text output. Gzip'd text is read as well.
#pragma once
#include <string>
#include <string_view>

#include "attribute/frame_builder.h"
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

// A flame graph from any input: aiflame profiles are attributed and built with `options`; folded
// and iaprof inputs are read as they are. Errors are one line naming the file.
Result<FlameData> read_flame_input(const std::string& path, const FrameOptions& options = {});

// The same from bytes already read; `name` is used in errors.
Result<FlameData> parse_flame_input(const std::string& bytes, const std::string& name, const FrameOptions& options = {});

}  // namespace aiflame
