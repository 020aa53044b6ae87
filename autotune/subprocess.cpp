#include "subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace attnforge {

namespace {

// Spawns argv with `actions` (may be null) and waits for it.
int spawn_and_wait(const std::vector<std::string>& argv,
                   const posix_spawn_file_actions_t* actions) {
  if (argv.empty()) return -1;
  std::vector<char*> pointers;
  for (const std::string& argument : argv) pointers.push_back(const_cast<char*>(argument.c_str()));
  pointers.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0].c_str(), actions, nullptr, pointers.data(), environ) != 0) {
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int run_program(const std::vector<std::string>& argv) {
  return spawn_and_wait(argv, nullptr);
}

int run_program(const std::vector<std::string>& argv, const std::string& output_file) {
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  int status = -1;
  if (posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_file.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644) == 0 &&
      posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO) == 0) {
    status = spawn_and_wait(argv, &actions);
  }
  posix_spawn_file_actions_destroy(&actions);
  return status;
}

}  // namespace attnforge
