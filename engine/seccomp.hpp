#pragma once

#include <filesystem>
#include <string>

namespace sandshim::shim {

// podman's default seccomp profile lets an unprivileged process create a user namespace
// (`unshare -Ur` works in a podman sandbox, docker's refuses it). The same profile with
// clone/unshare allowed only without CLONE_NEWUSER, and clone3 answered ENOSYS (its flags sit
// behind a pointer seccomp cannot read, so glibc falls back to clone).
std::string seccomp_without_user_namespaces(const std::string& engine_profile_json);

// gVisor (runsc 2022) answers every SCMP_ACT_ERRNO with EPERM, whatever errnoRet says, so a
// clone3 refused with ENOSYS becomes EPERM there, glibc never falls back to clone, and no thread
// starts (node aborts). gVisor does not implement clone3 (its own kernel answers ENOSYS): under
// runsc the profile lets the call through to it. Never for runc, where clone3 is real.
std::string seccomp_for_gvisor(const std::string& profile_json);

// The profile for podman runs and for every runsc run: derived from podman's own default (so
// its other rules stay as podman ships them; docker's default is built into dockerd, with
// clone3 refused) and written once under sandshim's state directory. Throws Fatal when the
// default cannot be read: a run never goes without it.
std::filesystem::path sandbox_seccomp_profile(bool gvisor);

}  // namespace sandshim::shim
