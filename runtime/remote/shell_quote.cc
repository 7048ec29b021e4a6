// POSIX shell quoting (see shell_quote.h).
#include "shell_quote.h"

#include <cstring>

namespace ember::remote {

namespace {

bool IsPlain(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("_@%+=:,./-", c) != nullptr;
}

}  // namespace

std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s) plain = plain && IsPlain(c);
  if (plain) return s;
  // Inside single quotes nothing is special but the closing quote itself.
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(a);
  }
  return out;
}

}  // namespace ember::remote
