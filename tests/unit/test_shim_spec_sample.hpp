#pragma once

#include "run/run_spec.hpp"

namespace sandshim::test {

// One python run of a workspace, as the hardening tests and the API translation tests take it.
inline shim::RunSpec sample_run_spec() {
  shim::RunSpec spec;
  spec.run_id = "0123456789abcdef";
  spec.invoked_as = "python";
  spec.command = {"python", "--network=host", "-c", "print(1)"};
  spec.cwd = "/work/project/src";
  spec.workspace = "/work/project";
  spec.image = "sandshim/python:bookworm";
  spec.env = {{"LANG", "C.UTF-8"}, {"PYTHONPATH", "src"}};
  spec.user = "1000:1000";
  spec.deadline_epoch_s = 1700000000;
  return spec;
}

}  // namespace sandshim::test
