// A timed record of an online schedule with the given query tile, for tests
// of the queries over a tuning database.
#pragma once

#include <string>

#include "autotune/record.h"

namespace attnforge {

inline autotune::Record tuned_record(const std::string& spec, const std::string& target,
                                     const std::string& bucket, int query_tile, double ms,
                                     autotune::Status status = autotune::Status::ok) {
  autotune::Record r;
  r.spec = spec;
  r.target = target;
  r.bucket = bucket;
  r.schedule = {{"form", "online"}, {"query_tile", query_tile}};
  r.status = status;
  r.ms_median = r.ms_min = r.ms_max = ms;
  return r;
}

}  // namespace attnforge
