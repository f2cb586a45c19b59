#pragma once

#include <filesystem>
#include <string>

namespace sandshim::shim {

// podman's default seccomp profile lets an unprivileged process create a user namespace
// (`unshare -Ur` works in a podman sandbox, docker's refuses it). The same profile with
// clone/unshare allowed only without CLONE_NEWUSER, and clone3 answered ENOSYS (its flags sit
// behind a pointer seccomp cannot read, so glibc falls back to clone).
std::string seccomp_without_user_namespaces(const std::string& engine_profile_json);

// The profile for podman runs: derived from podman's own default (so its other rules stay as
// podman ships them) and written once under sandshim's state directory. Throws Fatal when the
// default cannot be read: a run never goes without it.
std::filesystem::path podman_seccomp_profile();

}  // namespace sandshim::shim
