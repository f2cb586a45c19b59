#!/usr/bin/env bats

setup() {
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

@test "prints usage without arguments" {
  run ./scripts/check.sh --help
  [ "$status" -eq 0 ]
  [[ "$output" == *usage* ]]
}
