#!/usr/bin/env bash
# What git's stage costs a run under `sandbox.workspace = rw` (run/git_stage.cpp): `sandshim run
# --dry-run` (the policy, the stage filled with copies of .git's top-level files and emptied
# again, the engine arguments; nothing starts) in a repository of FILES tracked files (default
# 20,000: its index is about 2 MB) with the workspace rw, against the same with it ro (no stage),
# N times each, side by side in alternating order. Prints p50/p95 of each and the ratio of the
# p50s. The carry back after a real run adds a stat of each top-level file and a walk of refs
# and logs. Asserts nothing.
#
# BROKER=1 (root; AS_USER a user outside the docker group, default wrapbench-nd, made if absent)
# measures a broker's stage instead: the same dry runs through a private broker as that user,
# whose system file is switched between rw and ro before each (untimed); the broker copies .git's
# files beneath the held workspace into its own stage.
#
#   bench/git_stage.sh [BUILD_DIR]           FILES=20000 N=31 bench/git_stage.sh
#   BROKER=1 FILES=1000 bench/git_stage.sh
set -euo pipefail

build=${1:-build}
bin=$(realpath "${SANDSHIM_BIN:-$build/sandshim}")
files=${FILES:-20000}
runs=${N:-31}
[[ -x $bin ]] || {
  echo "git_stage.sh: $bin is missing: build the sandshim target first" >&2
  exit 2
}

dir=$(mktemp -d /tmp/sandshim-bench-git-stage.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
export HOME=$dir/home XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state XDG_DATA_HOME=$dir/data
mkdir -p "$HOME" "$XDG_CONFIG_HOME/sandshim" "$XDG_STATE_HOME" "$XDG_DATA_HOME"
printf '[sandbox]\nworkspace = rw\n' > "$dir/rw.conf"
printf '[sandbox]\nworkspace = ro\n' > "$dir/ro.conf"

repo=$dir/repo
mkdir -p "$repo"
/usr/bin/python3 - "$repo" "$files" <<'PY'
import os, sys
root, files = sys.argv[1], int(sys.argv[2])
for i in range(files):
    d = os.path.join(root, f"pkg{i // 100:04d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"m{i % 100}.py"), "w") as f:
        f.write(f"x = {i}\n")
PY
(cd "$repo" && git init -q && git add -A && git -c user.name=b -c user.email=b@example.com commit -qm one)

measure() { # CONFIG -> microseconds of one dry run
  local started=$EPOCHREALTIME
  (cd "$repo" && SANDSHIM_CONFIG=$1 "$bin" run --dry-run -- sh -c true > /dev/null)
  echo $((${EPOCHREALTIME/./} - ${started/./}))
}

if [[ ${BROKER:-0} == 1 ]]; then
  # shellcheck source=lib/private_broker.sh
  . "$(dirname "${BASH_SOURCE[0]}")/lib/private_broker.sh"
  # shellcheck source=../install/lib/testuser.sh
  . "$(dirname "${BASH_SOURCE[0]}")/../install/lib/testuser.sh"
  user=${AS_USER:-wrapbench-nd}
  ensure_plain_test_user "$user" > /dev/null
  chown -R "$user:" "$repo"
  trap 'private_broker_remove "$dir/broker"; rm -rf "$dir"' EXIT
  private_broker_start "$dir/broker" "$bin"
  measure() { # CONFIG: the broker's system file gets its [sandbox] section
    broker_write_system_config "$dir/broker/etc/config" "$dir/broker/state" "$dir/broker/anchors" \
      "$(cat "$1")"
    local started=$EPOCHREALTIME
    (cd "$repo" && runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="$dir" \
      SANDSHIM_BROKER=required SANDSHIM_BROKER_SOCKET="$PRIVATE_SOCKET" \
      "$PRIVATE_BIN" run --dry-run -- sh -c true > /dev/null)
    echo $((${EPOCHREALTIME/./} - ${started/./}))
  }
fi

declare -a t_rw t_ro
for ((i = 0; i < runs; i++)); do
  if ((i % 2 == 0)); then
    t_rw+=("$(measure "$dir/rw.conf")")
    t_ro+=("$(measure "$dir/ro.conf")")
  else
    t_ro+=("$(measure "$dir/ro.conf")")
    t_rw+=("$(measure "$dir/rw.conf")")
  fi
done

p50() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p95() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int(NR * 0.95 + 0.999)] }'; }
index_kb=$(($(stat -c %s "$repo/.git/index") / 1024))
echo "git stage: $files tracked files, index $index_kb KiB; $runs dry runs each, alternating$([[ ${BROKER:-0} == 1 ]] && echo ', through a broker')"
printf '%-32s p50 %6.2f ms   p95 %6.2f ms\n' "workspace = rw (git's stage)" \
  "$(awk -v v="$(p50 "${t_rw[@]}")" 'BEGIN { print v / 1000 }')" \
  "$(awk -v v="$(p95 "${t_rw[@]}")" 'BEGIN { print v / 1000 }')"
printf '%-32s p50 %6.2f ms   p95 %6.2f ms\n' "workspace = ro (no stage)" \
  "$(awk -v v="$(p50 "${t_ro[@]}")" 'BEGIN { print v / 1000 }')" \
  "$(awk -v v="$(p95 "${t_ro[@]}")" 'BEGIN { print v / 1000 }')"
awk -v a="$(p50 "${t_rw[@]}")" -v b="$(p50 "${t_ro[@]}")" 'BEGIN { printf "ratio of the p50s %.2f\n", a / b }'
