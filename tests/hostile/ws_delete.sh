# hostile: workspace | delete a tracked file (victim.txt; the control puts it back)
# expect: exit=73 status=error
# control: policy sandbox.workspace=rw exit=42
# shellcheck shell=sh disable=SC1091 # _probe.sh sources the harness's params
. ./_probe.sh
content=$(cat ../victim.txt)
rm -f ../victim.txt
[ -e ../victim.txt ] && blocked "victim.txt is still there"
printf '%s\n' "$content" >../victim.txt
escaped "deleted victim.txt"
