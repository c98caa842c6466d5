#include "common/json_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace sparsefuse {

Json load_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory; expected a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file (does it exist and is it readable?)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return Json::parse(buffer.str());
  } catch (const Json::exception& e) {
    // A syntax error (parse_error) or a number too large for a double
    // (out_of_range 406, e.g. 1E4304). Drop nlohmann's
    // "[json.exception.parse_error.101] " tag; keep line and column.
    std::string detail = e.what();
    size_t tag_end = detail.find("] ");
    if (tag_end != std::string::npos) detail = detail.substr(tag_end + 2);
    throw InputError(path, "", "malformed JSON: " + detail);
  }
}

std::string json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return fmt::format("the string \"{}\"", value.get<std::string>());
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return fmt::format("the number {}", value.dump());
    default: return "an unsupported value";
  }
}

static size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(3, word.size() / 2) + 1;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

static std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool JsonNode::has(std::string_view key) const {
  return value_->is_object() && value_->contains(key);
}

JsonNode JsonNode::child(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) fail(fmt::format("missing required key \"{}\"", key));
  return JsonNode(*it, file_, pointer_ + "/" + escape_pointer_token(key));
}

std::optional<JsonNode> JsonNode::optional_child(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonNode(*it, file_, pointer_ + "/" + escape_pointer_token(key));
}

JsonNode JsonNode::element(size_t index) const {
  return JsonNode((*value_)[index], file_, pointer_ + "/" + std::to_string(index));
}

void JsonNode::check_keys(const std::vector<std::string>& allowed) const {
  expect_object();
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::string hint = nearest_name(it.key(), allowed);
    std::string expected;
    for (const auto& a : allowed) expected += (expected.empty() ? "" : ", ") + a;
    throw InputError(file_, pointer_ + "/" + escape_pointer_token(it.key()),
                     hint.empty() ? fmt::format("unknown key \"{}\"; expected one of: {}", it.key(), expected)
                                  : fmt::format("unknown key \"{}\"; did you mean \"{}\"?", it.key(), hint));
  }
}

void JsonNode::expect_object() const {
  if (!value_->is_object()) fail("expected an object, got " + json_type_name(*value_));
}

size_t JsonNode::array_size() const {
  if (!value_->is_array()) fail("expected an array, got " + json_type_name(*value_));
  return value_->size();
}

int64_t JsonNode::as_int(int64_t min, int64_t max) const {
  const Json& v = *value_;
  bool integral = v.is_number_integer() ||
                  (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                   std::abs(v.get<double>()) < 9.0e15);
  if (!integral) fail(fmt::format("expected an integer in [{}, {}], got {}", min, max, json_type_name(v)));
  int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX
              : v.is_number_float() ? int64_t(v.get<double>())
                                    : v.get<int64_t>();
  if (x < min || x > max) fail(fmt::format("expected an integer in [{}, {}], got {}", min, max, x));
  return x;
}

double JsonNode::as_number(double min, double max, bool min_exclusive) const {
  const Json& v = *value_;
  if (!v.is_number()) fail(fmt::format("expected a number, got {}", json_type_name(v)));
  double x = v.get<double>();
  bool low = min_exclusive ? !(x > min) : !(x >= min);
  if (low || !(x <= max) || !std::isfinite(x)) {
    fail(fmt::format("expected a number {} {} and <= {}, got {}", min_exclusive ? ">" : ">=", min, max,
                     v.dump()));
  }
  return x;
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + json_type_name(*value_));
  return value_->get<std::string>();
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + json_type_name(*value_));
  return value_->get<bool>();
}

int64_t JsonNode::get_int(std::string_view key, int64_t fallback, int64_t min, int64_t max) const {
  auto c = optional_child(key);
  return c ? c->as_int(min, max) : fallback;
}

double JsonNode::get_number(std::string_view key, double fallback, double min, double max,
                            bool min_exclusive) const {
  auto c = optional_child(key);
  return c ? c->as_number(min, max, min_exclusive) : fallback;
}

std::string JsonNode::get_string(std::string_view key, const std::string& fallback) const {
  auto c = optional_child(key);
  return c ? c->as_string() : fallback;
}

bool JsonNode::get_bool(std::string_view key, bool fallback) const {
  auto c = optional_child(key);
  return c ? c->as_bool() : fallback;
}

void JsonNode::fail(const std::string& problem) const {
  throw InputError(file_, pointer_.empty() ? "/" : pointer_, problem);
}

}  // namespace sparsefuse
