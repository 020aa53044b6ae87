// The tuning database loader on an arbitrary file: it loads what are records,
// counts the rest as skipped, never crashes, and what it loads round-trips.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "autotune/database.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/attnforge_database_fuzz." + std::to_string(getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  attnforge::autotune::Database db(path);
  for (const attnforge::autotune::Record& r : db.records()) {
    if (attnforge::autotune::Record::from_json(r.to_json()).key() != r.key()) __builtin_trap();
  }
  return 0;
}
