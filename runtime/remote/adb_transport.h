// An Android device reached with `adb -s SERIAL` (board spec "adb:SERIAL"): adb shell runs
// commands, adb push and pull copy files. Untested here (no device); its argv are unit-tested.
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
  ProcessResult Exec(const std::vector<std::string>& argv) const override;
  void Push(const std::string& local_path, const std::string& remote_path,
            bool executable) const override;
  void Pull(const std::string& remote_path, const std::string& local_path) const override;

  /*! \brief The local argv of `adb -s SERIAL` followed by `args`. */
  std::vector<std::string> AdbArgv(const std::vector<std::string>& args) const;

 private:
  std::string serial_;
};

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_ADB_TRANSPORT_H_
