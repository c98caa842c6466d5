// Typed, validating access to a JSON document loaded from a file. Every
// accessor names the file and JSON pointer in its InputError, so callers never
// write their own error messages for type or range problems.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/input_error.h"

namespace sparsefuse {

using Json = nlohmann::json;

// Reads and parses FILE; a missing file or malformed JSON is an InputError.
Json load_json_file(const std::string& path);

// A JSON value together with where it came from.
class JsonNode {
 public:
  JsonNode(const Json& value, std::string file, std::string pointer)
      : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)) {}

  const Json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  bool has(std::string_view key) const;

  JsonNode child(std::string_view key) const;  // must exist
  std::optional<JsonNode> optional_child(std::string_view key) const;
  JsonNode element(size_t index) const;

  // Rejects keys outside ALLOWED, suggesting the nearest allowed key.
  void check_keys(const std::vector<std::string>& allowed) const;

  void expect_object() const;
  size_t array_size() const;  // expects an array
  int64_t as_int(int64_t min, int64_t max) const;
  double as_number(double min, double max, bool min_exclusive = false) const;
  std::string as_string() const;
  bool as_bool() const;

  // Convenience: optional member with a default.
  int64_t get_int(std::string_view key, int64_t fallback, int64_t min, int64_t max) const;
  double get_number(std::string_view key, double fallback, double min, double max,
                    bool min_exclusive = false) const;
  std::string get_string(std::string_view key, const std::string& fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;

  [[noreturn]] void fail(const std::string& problem) const;

 private:
  const Json* value_;
  std::string file_;
  std::string pointer_;
};

// The closest candidate by edit distance, or "" when nothing is close.
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

// A short, human description of a JSON value's type for error messages.
std::string json_type_name(const Json& value);

}  // namespace sparsefuse
