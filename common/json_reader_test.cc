#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/json_reader.h"

namespace sparsefuse {
namespace {

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonReader, NearestName) {
  EXPECT_EQ(nearest_name("wrokers", {"workers", "seed"}), "workers");
  EXPECT_EQ(nearest_name("zzzzzzzz", {"workers", "seed"}), "");
}

TEST(JsonReader, TypedAccessNamesPointer) {
  Json doc = Json::parse(R"({"a": {"b": [1, 2.5, "x", true]}})");
  JsonNode root(doc, "f.json", "");
  JsonNode b = root.child("a").child("b");
  EXPECT_EQ(b.array_size(), 4u);
  EXPECT_EQ(b.element(0).as_int(0, 10), 1);
  EXPECT_EQ(b.element(1).as_number(0, 10), 2.5);
  EXPECT_EQ(message([&] { b.element(1).as_int(0, 10); }),
            "f.json: at /a/b/1: expected an integer in [0, 10], got the number 2.5");
  EXPECT_EQ(message([&] { b.element(2).as_number(0, 1); }), "f.json: at /a/b/2: expected a number, got the string \"x\"");
  EXPECT_EQ(message([&] { b.element(3).as_string(); }), "f.json: at /a/b/3: expected a string, got true");
  EXPECT_EQ(message([&] { b.element(0).as_number(1, 5, true); }),
            "f.json: at /a/b/0: expected a number > 1 and <= 5, got 1");
  EXPECT_EQ(message([&] { root.child("c"); }), "f.json: at /: missing required key \"c\"");
}

TEST(JsonReader, FilesAndMalformedJson) {
  EXPECT_EQ(message([] { load_json_file("/nonexistent/x.json"); }),
            "/nonexistent/x.json: cannot open file (does it exist and is it readable?)");
  std::string path = (std::filesystem::temp_directory_path() / "sparsefuse_malformed.json").string();
  std::ofstream(path) << "{\"workers\": 4,,}";
  EXPECT_EQ(message([&] { load_json_file(path); }),
            path + ": malformed JSON: parse error at line 1, column 15: syntax error while parsing object key - "
                   "unexpected ','; expected string literal");
  // A number beyond a double's range is bad input too, not an uncaught exception (found by fuzzing).
  std::ofstream(path) << "{\"bytes\": 419E4304}";
  EXPECT_EQ(message([&] { load_json_file(path); }), path + ": malformed JSON: number overflow parsing '419E4304'");
}

}  // namespace
}  // namespace sparsefuse
