// ONNX's checker and shape inference write their reasons across lines with node dumps; one line
// reads better in a terminal and in a Kubernetes condition message.
#pragma once

#include <string>
#include <string_view>

namespace autodist::graph {

// `text` with every run of spaces, tabs and newlines collapsed to one space, trimmed.
inline std::string OneLine(std::string_view text) {
  std::string line;
  for (const char c : text) {
    const bool space = c == '\n' || c == '\t' || c == ' ';
    if (space && (line.empty() || line.back() == ' ')) continue;
    line += space ? ' ' : c;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace autodist::graph
