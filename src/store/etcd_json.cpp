#include "src/store/etcd_json.h"

#include <charconv>

namespace memloom::store::etcd {
namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> document(std::string* error) {
    JsonValue value;
    skip_space();
    bool ok = parse_value(value, 0);
    skip_space();
    if (ok && position_ != text_.size()) ok = fail("bytes after the JSON value");
    if (!ok) {
      if (error != nullptr) *error = error_ + " at byte " + std::to_string(position_);
      return std::nullopt;
    }
    return value;
  }

 private:
  bool fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  bool at_end() const { return position_ >= text_.size(); }
  char peek() const { return text_[position_]; }
  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      ++position_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return fail("an unknown literal");
    position_ += word.size();
    return true;
  }

  bool parse_value(JsonValue& value, int depth) {
    if (depth >= kMaxDepth) return fail("nesting deeper than 64 levels");
    if (at_end()) return fail("a value is missing");
    switch (peek()) {
      case '{':
        value.type = JsonValue::Type::kObject;
        return parse_object(value, depth);
      case '[':
        value.type = JsonValue::Type::kArray;
        return parse_array(value, depth);
      case '"':
        value.type = JsonValue::Type::kString;
        return parse_string(value.text);
      case 't':
        value.type = JsonValue::Type::kBool;
        value.boolean = true;
        return literal("true");
      case 'f':
        value.type = JsonValue::Type::kBool;
        return literal("false");
      case 'n':
        return literal("null");
      default:
        value.type = JsonValue::Type::kNumber;
        return parse_number(value.text);
    }
  }

  bool parse_object(JsonValue& value, int depth) {
    ++position_;  // '{'
    skip_space();
    if (!at_end() && peek() == '}') return ++position_, true;
    while (true) {
      skip_space();
      if (at_end() || peek() != '"') return fail("an object member must start with a name");
      std::string name;
      if (!parse_string(name)) return false;
      skip_space();
      if (at_end() || peek() != ':') return fail("':' expected after a member name");
      ++position_;
      skip_space();
      JsonValue member;
      if (!parse_value(member, depth + 1)) return false;
      value.members.emplace_back(std::move(name), std::move(member));
      skip_space();
      if (at_end()) return fail("the object is not closed");
      if (peek() == '}') return ++position_, true;
      if (peek() != ',') return fail("',' or '}' expected in an object");
      ++position_;
    }
  }

  bool parse_array(JsonValue& value, int depth) {
    ++position_;  // '['
    skip_space();
    if (!at_end() && peek() == ']') return ++position_, true;
    while (true) {
      skip_space();
      JsonValue item;
      if (!parse_value(item, depth + 1)) return false;
      value.items.push_back(std::move(item));
      skip_space();
      if (at_end()) return fail("the array is not closed");
      if (peek() == ']') return ++position_, true;
      if (peek() != ',') return fail("',' or ']' expected in an array");
      ++position_;
    }
  }

  bool hex4(uint32_t& code) {
    if (text_.size() - position_ < 4) return fail("a \\u escape needs four hex digits");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[position_++];
      code <<= 4;
      if (c >= '0' && c <= '9')
        code |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        code |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        code |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return fail("a \\u escape needs four hex digits");
    }
    return true;
  }

  static void put_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  bool parse_escape(std::string& out) {
    if (at_end()) return fail("the string ends inside an escape");
    char c = text_[position_++];
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u':
        break;
      default:
        return fail("an unknown escape in a string");
    }
    uint32_t code = 0;
    if (!hex4(code)) return false;
    if (code >= 0xDC00 && code <= 0xDFFF) return fail("a lone low surrogate");
    if (code >= 0xD800 && code <= 0xDBFF) {
      uint32_t low = 0;
      if (text_.substr(position_, 2) != "\\u") return fail("a high surrogate without its pair");
      position_ += 2;
      if (!hex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF) return fail("a high surrogate without its pair");
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    put_utf8(out, code);
    return true;
  }

  bool parse_string(std::string& out) {
    ++position_;  // '"'
    while (true) {
      if (at_end()) return fail("the string is not closed");
      char c = text_[position_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("a control character in a string");
      if (c == '\\') {
        if (!parse_escape(out)) return false;
      } else {
        out += c;
      }
    }
  }

  bool digits() {
    size_t start = position_;
    while (!at_end() && peek() >= '0' && peek() <= '9') ++position_;
    return position_ > start;
  }

  bool parse_number(std::string& out) {
    size_t start = position_;
    if (!at_end() && peek() == '-') ++position_;
    if (at_end()) return fail("a number is cut short");
    if (peek() == '0') {
      ++position_;
    } else if (!digits()) {
      return fail("an unexpected character");
    }
    if (!at_end() && peek() == '.') {
      ++position_;
      if (!digits()) return fail("digits expected after '.'");
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++position_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++position_;
      if (!digits()) return fail("digits expected in an exponent");
    }
    out.assign(text_.substr(start, position_ - start));
    return true;
  }

  std::string_view text_;
  size_t position_ = 0;
  std::string error_;
};

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

const JsonValue* JsonValue::find(std::string_view name) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [member, value] : members)
    if (member == name) return &value;
  return nullptr;
}

std::optional<JsonValue> parse_json(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

std::optional<int64_t> json_int(const JsonValue* value) {
  if (value == nullptr) return 0;
  if (value->type != JsonValue::Type::kString && value->type != JsonValue::Type::kNumber)
    return std::nullopt;
  const std::string& text = value->text;
  int64_t result = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return result;
}

std::string json_string(const JsonValue* value) {
  if (value == nullptr || value->type != JsonValue::Type::kString) return "";
  return value->text;
}

std::optional<std::string> json_bytes(const JsonValue* value) {
  if (value == nullptr) return std::string();
  if (value->type != JsonValue::Type::kString) return std::nullopt;
  return base64_decode(value->text);
}

std::string json_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t group = (static_cast<uint8_t>(bytes[i]) << 16) |
                     (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out += kBase64[group >> 18];
    out += kBase64[(group >> 12) & 63];
    out += kBase64[(group >> 6) & 63];
    out += kBase64[group & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kBase64[group >> 18];
    out += kBase64[(group >> 12) & 63];
    out += rest == 2 ? kBase64[(group >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int pad = 0;
    if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
    uint32_t group = 0;
    for (int j = 0; j < 4; ++j) {
      int digit = j >= 4 - pad ? 0 : base64_digit(text[i + j]);
      if (digit < 0) return std::nullopt;
      group = (group << 6) | static_cast<uint32_t>(digit);
    }
    out += static_cast<char>(group >> 16);
    if (pad < 2) out += static_cast<char>((group >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(group & 0xFF);
  }
  return out;
}

JsonObject& JsonObject::raw(std::string_view name, std::string_view json) {
  if (text_.size() > 1) text_ += ',';
  text_ += json_quote(name);
  text_ += ':';
  text_ += json;
  return *this;
}

std::string json_array(const std::vector<std::string>& elements) {
  std::string out = "[";
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) out += ',';
    out += elements[i];
  }
  return out + "]";
}

}  // namespace memloom::store::etcd
