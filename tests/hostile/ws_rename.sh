# hostile: workspace | rename and chmod a tracked file (victim.txt; the control undoes both)
# expect: exit=73 status=error
# control: policy sandbox.workspace=rw exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
mv ../victim.txt ../victim.moved 2>&1 || blocked "mv refused"
mv ../victim.moved ../victim.txt
chmod 600 ../victim.txt && chmod 666 ../victim.txt
escaped "renamed victim.txt"
