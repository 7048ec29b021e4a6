// Quoting for the board's POSIX shell: every argument that reaches a remote shell goes through
// ShellQuote, so a file name, host name or flag value is never interpreted as shell syntax.
#ifndef EMBER_RUNTIME_REMOTE_SHELL_QUOTE_H_
#define EMBER_RUNTIME_REMOTE_SHELL_QUOTE_H_

#include <string>
#include <vector>

namespace ember::remote {

/*! \brief `s` as one word of a POSIX shell command line: unchanged when it holds only characters
 * no shell treats specially ([A-Za-z0-9_@%+=:,./-], not empty), else in single quotes with each
 * ' written as '\''. */
std::string ShellQuote(const std::string& s);

/*! \brief The words of `argv`, each ShellQuote'd, joined by single spaces. */
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_SHELL_QUOTE_H_
