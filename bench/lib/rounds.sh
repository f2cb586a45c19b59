# shellcheck shell=bash
# What the side-by-side benches share: the order of variants in a round, and the wait that keeps
# one variant's background work out of the next one's sample. Sourced, not run.
#
# A rotation (round i runs variant (i + j) mod n at position j) keeps every variant behind the
# same neighbour in every round, so whatever a variant leaves running (a container the engine
# is still removing, a pool being refilled) always lands on the same successor. A fresh random
# permutation per round gives each variant every predecessor alike; the seed is printed so a run
# can be repeated (SEED=...).

bench_seed=${SEED:-$((($$ * 7919 + ${EPOCHSECONDS:-0}) % 32768))}
RANDOM=$bench_seed

# The indexes 0..COUNT-1 in a random order (Fisher-Yates), one per line.
round_order() { # COUNT
  local -a order=()
  local i j swap
  for ((i = 0; i < $1; i++)); do order[i]=$i; done
  for ((i = $1 - 1; i > 0; i--)); do
    j=$((RANDOM % (i + 1)))
    swap=${order[i]} order[i]=${order[j]} order[j]=$swap
  done
  printf '%s\n' "${order[@]}"
}

# How many of sandshim's run containers (`sandshim-` and a 16-digit run id) the engine holds,
# running or not: warm pools' idle containers included, the benches' own helpers not.
run_container_count() { # ENGINE
  "$1" ps -a --format '{{.Names}}' 2> /dev/null | grep -c '^sandshim-[0-9a-f]\{16\}$' || true
}

# Waits, untimed, until the engine holds no more run containers than BEFORE: the last sample's
# container is gone (a cold run returns at its exit and its removal follows; `docker run --rm`
# waits for it), so it does not run beside the next sample. 15 s at most.
settle_run_containers() { # ENGINE BEFORE
  local give_up=$((${EPOCHSECONDS:-0} + 15))
  while (($(run_container_count "$1") > $2)) && ((${EPOCHSECONDS:-0} < give_up)); do
    sleep 0.05
  done
}
