// Row softmax over the visible keys of a scores matrix, in place, for the
// OpenBLAS unfused peer. Built with fast math so exp vectorizes (glibc's
// libmvec); it only ever sees finite values, since masked keys are skipped
// rather than set to -inf.
#pragma once

#include "spec/attention_spec.h"

namespace attnforge::bench {

// Rows [row_begin, row_end) of the q_len x kv_len row-major `scores`: each
// becomes softmax over its visible keys and 0 elsewhere; a row that sees no
// key becomes all zeros. A softcap applies to the visible logits first.
void softmax_rows(const AttentionSpec& spec, float* scores, long q_len, long kv_len, long row_begin,
                  long row_end);

}  // namespace attnforge::bench
