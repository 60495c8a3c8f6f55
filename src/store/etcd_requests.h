// The pieces of etcd v3 requests the etcd client sends (transaction comparisons and operations,
// as JSON for the gateway) and readers of the replies' parts. Replies that lack what they must
// hold throw memloom::Error(kCommunication).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/store/etcd_json.h"

namespace memloom::store::etcd::requests {

// The kvs[0] of a range reply (or of a txn's response_range), nullptr if the key is missing.
const JsonValue* first_kv(const JsonValue& range);
// A kv's value (missing: "").
std::string kv_value(const JsonValue* kv);
// An integer member (missing: 0).
int64_t reply_int(const JsonValue* value, const char* what);
// The index-th response_range of a transaction's reply.
const JsonValue& txn_range(const JsonValue& reply, size_t index);

// The body of a put (lease 0: none), and a put, range and delete as transaction operations.
std::string put_body(const std::string& key, const std::string& value, int64_t lease);
std::string put_op(const std::string& key, const std::string& value, int64_t lease);
std::string range_op(const std::string& key);
std::string delete_op(const std::string& key, const std::string& range_end = "");

// Transaction comparisons: the key's version (0: missing), its mod revision, its value.
std::string version_is(const std::string& key, int64_t version);
std::string mod_revision_is(const std::string& key, int64_t revision);
std::string value_is(const std::string& key, const std::string& value);

// A decimal int64, exactly (no junk, no overflow), as the TCP store's add reads it.
std::optional<int64_t> parse_counter(const std::string& text);

}  // namespace memloom::store::etcd::requests
