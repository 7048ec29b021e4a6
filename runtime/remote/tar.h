// The POSIX ustar archive format (IEEE 1003.1-1988, "ustar Interchange Format"), as far as the
// board sessions need it: several files go to a board, and a run's outputs come back, in one
// connection each (one `tar` on the board), instead of one connection per file.
//
// Each member: a 512-byte header (name[100] at 0, mode[8] at 100, uid[8], gid[8], size[12] at
// 124, mtime[12] at 136, chksum[8] at 148, typeflag at 156, linkname[100], "ustar\0" "00" at
// 257, uname[32], gname[32], devmajor[8], devminor[8], prefix[155] at 345; numbers in octal
// ASCII; chksum the byte sum of the header with its own field read as spaces), then the data
// padded to 512 bytes. Two zero blocks end the archive.
#ifndef EMBER_RUNTIME_REMOTE_TAR_H_
#define EMBER_RUNTIME_REMOTE_TAR_H_

#include <map>
#include <string>
#include <vector>

namespace ember::remote {

struct TarMember {
  std::string local_path;  // the file to read
  std::string name;        // its path in the archive (relative, at most 100 bytes)
  bool executable = false;
};

/*! \brief Writes the members' files as an archive at `tar_path`; throws std::runtime_error naming
 * a file that cannot be read or a name that does not fit. */
void WriteTar(const std::vector<TarMember>& members, const std::string& tar_path);

/*!
 * \brief The regular files of the archive at `tar_path` by name ("./" stripped), for archives of
 * one flat directory (GNU, busybox and toybox tar alike). Names with a '/' or "..", and members
 * other than regular files and directories, are refused: a board never writes outside the
 * directory it was given. Throws std::runtime_error naming `what` on a malformed archive.
 */
std::map<std::string, std::string> ReadFlatTar(const std::string& tar_path,
                                               const std::string& what);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_TAR_H_
