# Writes the HTML report's script and style sheet into a C++ header as raw string literals, so that
# the report stays one self-contained file and the sources stay plain .js and .css files. The script
# is the page's files in load order: the selection, the heatmap, then the report that uses both.
file(READ "${DIR}/select.js" select)
file(READ "${DIR}/heatmap.js" heatmap)
file(READ "${DIR}/report.js" report)
file(READ "${DIR}/report.css" css)
file(WRITE "${OUT}" "// Generated from src/output/html/*.js and report.css by embed.cmake; do not edit.\n#pragma once\nnamespace aiflame {\ninline constexpr const char kReportJs[] = R\"AIFLAME_JS(${select}${heatmap}${report})AIFLAME_JS\";\ninline constexpr const char kReportCss[] = R\"AIFLAME_CSS(${css})AIFLAME_CSS\";\n}  // namespace aiflame\n")
