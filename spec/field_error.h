// An error about one named field of something a user wrote (a spec, a
// schedule): the message names the field, and field() gives it to callers.
#pragma once

#include <stdexcept>
#include <string>

namespace attnforge {

class FieldError : public std::invalid_argument {
 public:
  FieldError(const std::string& subject, std::string field, const std::string& message)
      : std::invalid_argument(subject + ": " + field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace attnforge
