#include "install/doctor_engines.hpp"

namespace sandshim::install {

Finding engines_finding(int64_t answering, int64_t total, std::string detail) {
  if (answering == total) {
    return {"engines", Status::ok, std::move(detail), ""};
  }
  return {"engines", answering == 0 ? Status::fail : Status::warn, std::move(detail),
          "start the engines that do not answer, or take them out of engine.endpoints "
          "(`sandshim policy show` names the file that sets it)"};
}

}  // namespace sandshim::install
