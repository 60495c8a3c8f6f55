#include "src/store/etcd_requests.h"

#include <charconv>

#include "memloom/error.h"

namespace memloom::store::etcd::requests {

// The kvs[0] of a range reply (or of a txn's response_range), nullptr if the key is missing.
const JsonValue* first_kv(const JsonValue& range) {
  const JsonValue* kvs = range.find("kvs");
  return kvs != nullptr && !kvs->items.empty() ? &kvs->items[0] : nullptr;
}

std::string kv_value(const JsonValue* kv) {
  auto value = etcd::json_bytes(kv ? kv->find("value") : nullptr);
  if (!value) raise(Status::kCommunication, "etcd sent a value that is not base64");
  return *value;
}

int64_t reply_int(const JsonValue* value, const char* what) {
  auto number = etcd::json_int(value);
  if (!number) raise(Status::kCommunication, std::string("etcd sent a bad ") + what);
  return *number;
}

// The i-th response_range of a transaction's reply.
const JsonValue& txn_range(const JsonValue& reply, size_t index) {
  const JsonValue* responses = reply.find("responses");
  if (responses == nullptr || responses->items.size() <= index)
    raise(Status::kCommunication, "etcd's transaction reply lacks a response");
  const JsonValue* range = responses->items[index].find("response_range");
  if (range == nullptr) raise(Status::kCommunication, "etcd's transaction reply lacks a range");
  return *range;
}

std::string put_body(const std::string& key, const std::string& value, int64_t lease) {
  JsonObject put;
  put.bytes("key", key).bytes("value", value);
  if (lease != 0) put.integer("lease", lease);
  return put.finish();
}

std::string put_op(const std::string& key, const std::string& value, int64_t lease) {
  return JsonObject().raw("request_put", put_body(key, value, lease)).finish();
}

std::string range_op(const std::string& key) {
  return JsonObject().raw("request_range", JsonObject().bytes("key", key).finish()).finish();
}

std::string delete_op(const std::string& key, const std::string& range_end) {
  JsonObject remove;
  remove.bytes("key", key);
  if (!range_end.empty()) remove.bytes("range_end", range_end);
  return JsonObject().raw("request_delete_range", remove.finish()).finish();
}

std::string version_is(const std::string& key, int64_t version) {
  return JsonObject()
      .string("target", "VERSION")
      .bytes("key", key)
      .integer("version", version)
      .finish();
}

std::string mod_revision_is(const std::string& key, int64_t revision) {
  return JsonObject()
      .string("target", "MOD")
      .bytes("key", key)
      .integer("mod_revision", revision)
      .finish();
}

std::string value_is(const std::string& key, const std::string& value) {
  return JsonObject().string("target", "VALUE").bytes("key", key).bytes("value", value).finish();
}

// A decimal int64, exactly (no sign-less junk, no overflow), as the TCP store's add reads it.
std::optional<int64_t> parse_counter(const std::string& text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace memloom::store::etcd::requests
