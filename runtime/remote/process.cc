// posix_spawnp with pipes for stdout and stderr (see process.h).
#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "shell_quote.h"

extern char** environ;

namespace ember::remote {

namespace {

// Closes the descriptor it holds when the scope ends, whichever way it ends.
class Fd {
 public:
  Fd() = default;
  ~Fd() { Reset(-1); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

std::runtime_error StartError(const std::string& program, const std::string& what, int err) {
  return std::runtime_error("cannot start " + program + ": " + what + ": " + std::strerror(err));
}

void MakePipe(Fd* read_end, Fd* write_end, const std::string& program) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw StartError(program, "pipe", errno);
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
}

void OpenOrThrow(Fd* fd, const std::string& path, int flags, const std::string& why) {
  int f = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (f < 0) throw std::runtime_error("cannot open " + path + " (" + why + "): " + strerror(errno));
  fd->Reset(f);
}

// Reads both pipes until each is closed, so that neither stream can fill up and stall the child.
void Drain(int out_fd, int err_fd, std::string* out, std::string* err) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {out, err};
  int open_count = (out_fd >= 0) + (err_fd >= 0);
  char buf[65536];
  while (open_count > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessIo& io) {
  if (argv.empty()) throw std::runtime_error("RunProcess: empty argv");
  const std::string& program = argv[0];
  Fd in, out_read, out_write, err_read, err_write;
  OpenOrThrow(&in, io.stdin_path.empty() ? "/dev/null" : io.stdin_path, O_RDONLY,
              program + "'s input");
  if (io.stdout_path.empty()) {
    MakePipe(&out_read, &out_write, program);
  } else {
    OpenOrThrow(&out_write, io.stdout_path, O_WRONLY | O_CREAT | O_TRUNC, program + "'s output");
  }
  MakePipe(&err_read, &err_write, program);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw StartError(program, "is it installed and on PATH?", rc);
  // Only the child holds the write ends now, so the pipes close when it exits.
  in.Reset(-1);
  out_write.Reset(-1);
  err_write.Reset(-1);

  ProcessResult result;
  Drain(out_read.get(), err_read.get(), &result.out, &result.err);
  result.exit_code = WaitFor(pid);
  return result;
}

std::string DescribeArgv(const std::vector<std::string>& argv) { return ShellJoin(argv); }

}  // namespace ember::remote
