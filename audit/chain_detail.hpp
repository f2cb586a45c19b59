#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "audit/chain.hpp"
#include "audit/sqlite.hpp"

// What chain.cpp (links, sealing, prune) and chain_verify.cpp (verify) share; not for other
// callers, which use audit/chain.hpp.
namespace sandshim::audit::chain_detail {

// The runs' chain and the decisions'.
extern const ChainTable* const k_chain_tables[2];

// The hash of the link in `row` from `first_column` on (the table's link columns, named
// `names`): SHA-256 over the hashed columns, or HMAC-SHA256 under `key` over all of them.
std::string link_hash(const ChainTable& table, const Statement& row, int first_column,
                      const std::vector<std::string>& names, const ChainKey* key);

// The hashed columns, then the keyed ones: what every link statement selects.
std::string link_columns(const ChainTable& table);

// The statement's column names from `first_column` on.
std::vector<std::string> names_from(const Statement& row, int first_column);

// `sql` with each `$T` replaced by the table's name.
std::string table_sql(const ChainTable& table, std::string_view sql);

// The HMAC that seals chain_state under `key`.
std::string state_mac_of(const ChainState& state, const ChainKey& key);

}  // namespace sandshim::audit::chain_detail
