// The tuning database loader on an arbitrary file: it loads what are records,
// counts the rest as skipped, never crashes, and what it loads round-trips.
// The rules over loaded records (standing records, generations, contenders)
// hold on whatever it loads.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "autotune/database.h"
#include "autotune/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnforge::autotune;
  static const std::string path = "/tmp/attnforge_database_fuzz." + std::to_string(getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  Database db(path);
  std::remove(path.c_str());  // loaded whole; no input outlives the fuzzer
  for (const Record& r : db.records()) {
    if (Record::from_json(r.to_json()).key() != r.key()) __builtin_trap();
    const Record* standing = db.standing(r.key());
    if (!standing || standing->key() != r.key()) __builtin_trap();
  }
  const size_t current = db.current_records().size();
  if (db.contenders().size() > current || current > db.records().size()) __builtin_trap();
  for (const GroupSummary& g : summarize(db)) {
    auto best = db.best(g.spec, g.target, g.bucket);
    if (g.best_tuned && (!best || best->ms_median > g.best_tuned->ms_median)) __builtin_trap();
  }
  return 0;
}
