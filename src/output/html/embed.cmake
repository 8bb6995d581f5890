# Writes the HTML report's script and style sheet into a C++ header as raw string literals, so that
# the report stays one self-contained file and the sources stay plain .js and .css files.
file(READ "${JS}" js)
file(READ "${CSS}" css)
file(WRITE "${OUT}" "// Generated from src/output/html/report.js and report.css by embed.cmake; do not edit.\n#pragma once\nnamespace aiflame {\ninline constexpr const char kReportJs[] = R\"AIFLAME_JS(${js})AIFLAME_JS\";\ninline constexpr const char kReportCss[] = R\"AIFLAME_CSS(${css})AIFLAME_CSS\";\n}  // namespace aiflame\n")
