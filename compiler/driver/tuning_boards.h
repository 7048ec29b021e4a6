// The boards a compile tunes on or reads winners for: the one of --remote, or the boards of a
// --fleet hosts file whose architecture is the target's (a fleet of Pi 4s and a BeagleBone
// tuned for aarch64 measures on the Pis only).
#ifndef EMBER_COMPILER_DRIVER_TUNING_BOARDS_H_
#define EMBER_COMPILER_DRIVER_TUNING_BOARDS_H_

#include <ember/compiler/driver.h>
#include <ember/compiler/target.h>

#include <vector>

namespace ember::compiler {

/*! \brief Empty when neither --remote nor --fleet is given; throws CompileError when both are,
 * or when no board of the fleet has the target's architecture (naming the file and triples). */
std::vector<RemoteBoardOptions> TuningBoards(const CompileOptions& opt, const Target& target);

}  // namespace ember::compiler

#endif  // EMBER_COMPILER_DRIVER_TUNING_BOARDS_H_
