// The tuning database loader on an arbitrary file: it loads what are records,
// counts the rest as skipped, never crashes, and what it loads round-trips.
// The rules over loaded records (standing records, generations, contenders)
// hold on whatever it loads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "autotune/database.h"
#include "autotune/summary.h"
#include "autotune/temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnforge::autotune;
  // One folder for the whole run; each input is loaded whole, then removed.
  static const TempDir folder("attnforge_database_fuzz_");
  const std::filesystem::path path = folder.path() / "input.jsonl";
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  Database db(path);
  std::filesystem::remove(path);
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
