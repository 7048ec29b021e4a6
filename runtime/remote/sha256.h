// SHA-256 (FIPS 180-4) of files, to copy to a board only what changed since the last copy.
#ifndef EMBER_RUNTIME_REMOTE_SHA256_H_
#define EMBER_RUNTIME_REMOTE_SHA256_H_

#include <string>

namespace ember::remote {

/*! \brief The digest of `data` as 64 lowercase hex digits (what sha256sum prints). */
std::string Sha256Hex(const std::string& data);

/*! \brief The digest of the file at `path`; throws std::runtime_error naming it when unreadable. */
std::string Sha256File(const std::string& path);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_SHA256_H_
