# Shared by the shell probes (sourced): the run's parameters and the verdict (see _probe.py).
. ./params
escaped() {
    echo "ESCAPED: $*"
    exit 42
}
blocked() {
    echo "blocked: $*"
    exit 73
}
