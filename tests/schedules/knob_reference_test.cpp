// The knob reference: every row of the table with its meaning, written only
// between its markers, and docs/schedules.md holding the table's current one.
#include "schedules/knob_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "schedules/knob_table.h"

namespace attnforge::schedules {
namespace {

TEST(KnobReference, EveryKnobHasARowWithItsMeaning) {
  const std::string reference = knob_reference_markdown();
  for (const KnobRow& row : knob_table()) {
    EXPECT_FALSE(row.meaning().empty()) << row.name();
    EXPECT_NE(reference.find("| `" + row.name() + "` | "), std::string::npos) << row.name();
  }
  // A header, its rule and one line per knob.
  EXPECT_EQ(std::count(reference.begin(), reference.end(), '\n'), 2 + knob_table().size());
  EXPECT_NE(reference.find("| `vector_width` | CPU | "), std::string::npos);
  EXPECT_NE(reference.find("powers of 2, 4..16"), std::string::npos);
}

TEST(KnobReference, WritingReplacesOnlyTheLinesBetweenTheMarkers) {
  const std::string head = std::string("# Schedules\n\n") + kKnobReferenceBegin + "\n";
  const std::string tail = std::string(kKnobReferenceEnd) + "\n\nMore text.\n";
  const std::string written = with_knob_reference(head + "an old table\n" + tail);
  EXPECT_EQ(written, head + knob_reference_markdown() + tail);
  EXPECT_EQ(knob_reference_in(written), knob_reference_markdown());
  EXPECT_THROW(with_knob_reference("# No markers\n"), std::invalid_argument);
  EXPECT_THROW(with_knob_reference(tail + head), std::invalid_argument);
}

TEST(KnobReference, TheDocsHoldTheTablesCurrentReference) {
  std::ifstream in(ATTNFORGE_SOURCE_DIR "/docs/schedules.md", std::ios::binary);
  ASSERT_TRUE(in) << "cannot read docs/schedules.md";
  const std::string document{std::istreambuf_iterator<char>(in), {}};
  EXPECT_EQ(knob_reference_in(document), knob_reference_markdown())
      << "docs/schedules.md's knob reference differs from the knob table; run "
         "`build/attnforge knobs --write docs/schedules.md`";
}

}  // namespace
}  // namespace attnforge::schedules
