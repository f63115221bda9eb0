// contend::synchronization_error: thrown when a primitive is misused in a way it can detect
// (unlocking a lock that is not held, waiting on a monitor you did not enter). The primitive
// is left in the state it had before the bad call, so the program may carry on using it.
#pragma once

#include <stdexcept>
#include <string>

namespace contend {

class synchronization_error : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

}  // namespace contend
