// Which runtime a board needs: the architecture an artifact's lib.so (or an ember-run) was built
// for, read from its ELF header, and where a runtime of that architecture was built.
#ifndef EMBER_RUNTIME_REMOTE_BOARD_ARCH_H_
#define EMBER_RUNTIME_REMOTE_BOARD_ARCH_H_

#include <string>
#include <vector>

namespace ember::remote {

/*! \brief "x86_64", "aarch64" or "armhf" from the ELF header of `path`; throws
 * std::runtime_error naming the file and the machine when it is none of them. */
std::string ElfArch(const std::string& path);

/*! \brief The artifact's code: ARTIFACT/lib.so for a directory, else the file itself. */
std::string ArtifactLibrary(const std::string& artifact);

/*! \brief `flag_dirs` (--runtime-dir, in order), then those of EMBER_RUNTIME_DIRS (DIR:DIR...). */
std::vector<std::string> RuntimeSearchDirs(std::vector<std::string> flag_dirs);

/*! \brief An ember-run for one architecture and the runtime library beside it. */
struct BoardRuntime {
  std::string arch;
  std::string ember_run;  // .../bin/ember-run
  std::string library;    // .../lib/libember_runtime.so.N (the file the binary asks for)
  std::string soname;     // libember_runtime.so.N
};

/*!
 * \brief Finds the ember-run built for `arch`: for each directory D of `search_dirs` (in order),
 * D/cross-ARCH, D/ARCH and D itself, each holding bin/ember-run and lib/libember_runtime.so.N
 * (a build tree or an install prefix); then, for the host's own architecture, the running
 * ember-run (`self_exe`). Throws std::runtime_error listing every place looked at.
 */
BoardRuntime FindBoardRuntime(const std::string& arch, const std::vector<std::string>& search_dirs,
                              const std::string& self_exe);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_BOARD_ARCH_H_
