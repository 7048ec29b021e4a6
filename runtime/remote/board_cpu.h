// A board's CPU as the tuning log names it, from the text of its /proc/cpuinfo: two boards with
// the same CPU (two Raspberry Pi 4s) get the same name, so a tuning log from one serves the other.
#ifndef EMBER_RUNTIME_REMOTE_BOARD_CPU_H_
#define EMBER_RUNTIME_REMOTE_BOARD_CPU_H_

#include <string>

namespace ember::remote {

/*!
 * \brief "model name" of the first processor (x86, some ARMv7 kernels), then for ARM its
 * "CPU implementer", "CPU architecture", "CPU variant", "CPU part" and "CPU revision"
 * (implementer 0x41 part 0xd08 is a Cortex-A72), joined by spaces, e.g.
 * "ARMv7 Processor rev 4 (v7l) impl=0x41 arch=7 var=0x0 part=0xc07 rev=4". Whitespace runs
 * become one space and control characters are dropped, so the name fits a tuning-log key.
 * Returns "" when the text names none of these.
 */
std::string BoardCpuName(const std::string& cpuinfo);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_BOARD_CPU_H_
