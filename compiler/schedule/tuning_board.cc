// The tuning board's CPU name (see tuning_board.h).
#include "tuning_board.h"

#include <mutex>

namespace ember::compiler::schedule {

namespace {

std::mutex& BoardMutex() {
  static std::mutex m;
  return m;
}

std::string& BoardCpu() {
  static std::string cpu;
  return cpu;
}

}  // namespace

std::string TuningBoardSuffix() {
  std::lock_guard<std::mutex> lock(BoardMutex());
  return BoardCpu().empty() ? "" : " board=" + BoardCpu();
}

ScopedTuningBoard::ScopedTuningBoard(const std::string& cpu) {
  std::lock_guard<std::mutex> lock(BoardMutex());
  previous_ = BoardCpu();
  BoardCpu() = cpu;
}

ScopedTuningBoard::~ScopedTuningBoard() {
  std::lock_guard<std::mutex> lock(BoardMutex());
  BoardCpu() = previous_;
}

}  // namespace ember::compiler::schedule
