# hostile: output | print 1 GiB of lines to stdout from the shell (yes | head)
# expect: exit=0 status=ok
# check: flood stdout 1073741824
# control: host exit=0
yes 'all work and no play makes jack a dull boy' | head -c 1073741824
