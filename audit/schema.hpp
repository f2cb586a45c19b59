#pragma once

#include <algorithm>
#include <cstdint>

#include "audit/run_fields.hpp"
#include "audit/sqlite.hpp"

namespace sandshim::audit {

// The last version with a step of its own in schema.cpp; a later one may only add run columns
// (their `since` in run_fields.hpp).
inline constexpr int64_t k_last_migration_step = 8;

// The schema version this build reads and writes (PRAGMA user_version). Version 0 is an empty file.
inline constexpr int64_t k_schema_version =
    std::max(k_last_migration_step, newest_run_column_version());

int64_t schema_version(Database& db);

// Brings the schema forward to `target`, one recorded step at a time, in one IMMEDIATE
// transaction; a schema newer than this build is refused, never touched.
void migrate(Database& db, int64_t target = k_schema_version);

// Throws when the file was written by a newer sandshim, naming both versions and the fix.
void refuse_newer_schema(const Database& db, int64_t version);

}  // namespace sandshim::audit
