// The little JSON that etcd's v3 gateway speaks: a strict reader (RFC 8259, bounded depth, no
// trailing bytes) and a writer for the few request shapes the etcd client sends, plus the base64
// that the gateway uses for every key and value. Boost 1.74's Boost.JSON is a compiled library
// Debian does not ship header-only, and the shapes needed are few.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memloom::store::etcd {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a string's decoded characters, or a number's literal text
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  // The member `name` of an object (nullptr if absent or not an object).
  const JsonValue* find(std::string_view name) const;
};

// Parses one JSON document. Returns nullopt and sets *error (when given) on anything that is not
// exactly one valid value, or nests deeper than 64 levels.
std::optional<JsonValue> parse_json(std::string_view text, std::string* error = nullptr);

// The gateway writes 64-bit integers as strings ("revision":"12"); proto3 leaves out zeros and
// false, so a missing member reads as 0. Returns nullopt for anything but an integer.
std::optional<int64_t> json_int(const JsonValue* value);
// A string member, or "" when absent.
std::string json_string(const JsonValue* value);
// A base64 member decoded, or "" when absent (proto3 leaves out empty bytes); nullopt if invalid.
std::optional<std::string> json_bytes(const JsonValue* value);

// "..." with the characters JSON requires escaped.
std::string json_quote(std::string_view text);

std::string base64_encode(std::string_view bytes);
// Strict standard base64 with padding; nullopt for anything else.
std::optional<std::string> base64_decode(std::string_view text);

// Builds one JSON object member by member: JsonObject().bytes("key", k).integer("lease", 5).
class JsonObject {
 public:
  JsonObject& bytes(std::string_view name, std::string_view value) {
    return raw(name, json_quote(base64_encode(value)));
  }
  JsonObject& string(std::string_view name, std::string_view value) {
    return raw(name, json_quote(value));
  }
  // As a string, the way the gateway writes 64-bit integers.
  JsonObject& integer(std::string_view name, int64_t value) {
    return raw(name, "\"" + std::to_string(value) + "\"");
  }
  JsonObject& boolean(std::string_view name, bool value) {
    return raw(name, value ? "true" : "false");
  }
  JsonObject& raw(std::string_view name, std::string_view json);
  std::string finish() const { return text_ + "}"; }

 private:
  std::string text_ = "{";
};

// "[a,b,c]" from already-encoded elements.
std::string json_array(const std::vector<std::string>& elements);

}  // namespace memloom::store::etcd
