// Umbrella header: everything public in contend.
#pragma once

#include "contend/cache_padded.hpp"
#include "contend/condition_variable.hpp"
#include "contend/cpu_relax.hpp"
#include "contend/event.hpp"
#include "contend/monitor.hpp"
#include "contend/mutex.hpp"
#include "contend/parking_lot.hpp"
#include "contend/pipe.hpp"
#include "contend/pipe_fd.hpp"
#include "contend/shared_mutex.hpp"
#include "contend/spin_lock.hpp"
#include "contend/synchronization_error.hpp"
#include "contend/thin_lock.hpp"
#include "contend/thread_pool.hpp"
#include "contend/wait_backend.hpp"
