// An Android device reached with `adb -s SERIAL` (board spec "adb:SERIAL"): `adb shell` runs
// commands, `adb exec-in` / `exec-out` when a file is streamed in or out (they pass bytes
// unchanged, where shell's terminal would not). Untested here (no device); its argv are
// unit-tested.
#ifndef EMBER_RUNTIME_REMOTE_ADB_TRANSPORT_H_
#define EMBER_RUNTIME_REMOTE_ADB_TRANSPORT_H_

#include <string>
#include <vector>

#include "transport.h"

namespace ember::remote {

class AdbTransport : public Transport {
 public:
  explicit AdbTransport(std::string serial) : serial_(std::move(serial)) {}
  std::string Name() const override { return "adb:" + serial_; }
  /*! \brief The local argv of `adb -s SERIAL` followed by `args`. */
  std::vector<std::string> AdbArgv(const std::vector<std::string>& args) const;

 protected:
  ProcessResult DoExec(const std::vector<std::string>& argv, const ProcessIo& io) const override;

 private:
  std::string serial_;
};

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_ADB_TRANSPORT_H_
