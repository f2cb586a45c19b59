# Shared by the shell probes (sourced): the run's parameters and the verdict (see _probe.py).
# shellcheck shell=sh disable=SC1091 # params is written by the harness
. ./params
escaped() {
    echo "ESCAPED: $*"
    exit 42
}
blocked() {
    echo "blocked: $*"
    exit 73
}
