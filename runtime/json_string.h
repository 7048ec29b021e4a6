// JSON string literals, for every JSON the project writes: graph.json (emberc's backend, which
// includes this header from the runtime's tree) and the profiler's reports and traces. One
// escaping, so that a node name reads the same in each.
#ifndef EMBER_RUNTIME_JSON_STRING_H_
#define EMBER_RUNTIME_JSON_STRING_H_

#include <cstdio>
#include <string>

namespace ember::runtime {

/*! \brief \p s as a quoted JSON string: '"' and '\\' escaped, newline and tab as \n and \t, other
 * control characters as \u00XX; every other byte (UTF-8 included) as it is. */
inline std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_JSON_STRING_H_
