# Runs inside cpack (CPACK_PRE_BUILD_SCRIPTS) on the staged tree, after `cmake --install` filled
# it and before the .deb is made: what only the package installs, never a plain `cmake --install`.
#  - /etc/sandshim/config (a conffile, so dpkg keeps an administrator's edits on upgrade) turns
#    the broker on for every user, as install/setup.sh does: broker.mode = required, one warm
#    container per image with the launcher, and the keyed, anchored audit at setup's paths (so
#    a chain setup began is the package's to extend, and the reverse). (Setup's system file also names wrap mode's bash
#    image, which makes bash a shimmed command; the package leaves that to the administrator.)
#  - /etc/init.d/sandshim starts the broker where systemd is not PID 1 (postinst links it into
#    the runlevels); systemd ignores it, the native sandshim.service has the same name.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
set(config "${root}/etc/sandshim/config")
file(READ "${config}" text)
set(replacements
    "# [broker]\n" "[broker]\n"
    "# mode = auto\n" "# the package's default (docs/install.md): every run goes through the broker\nmode = required\n"
    "# [pool]\n" "[pool]\n"
    "# size = 0\n" "size = 1\n"
    "# start = launcher\n" "start = launcher\n"
    "# [audit]\n" "[audit]\n"
    "# key_file =\n" "key_file = /var/lib/sandshim/keys/chain.key\n"
    "# anchor_file =\n" "anchor_file = /var/log/sandshim/anchor.log\n")
while(replacements)
  list(POP_FRONT replacements from to)
  string(FIND "${text}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "stage.cmake: the generated config has no line '${from}'")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
endwhile()
file(WRITE "${config}" "${text}")
# file(COPY): file(INSTALL) would put DESTDIR (the staging tree) in front of the destination again.
file(COPY "${CPACK_SANDSHIM_INIT_SCRIPT}" DESTINATION "${root}/etc/init.d"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE)
