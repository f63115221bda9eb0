// The library is built with hidden visibility: only what is marked here is exported (the
// pthread functions it replaces and contend_interpose_active), so the copy of contend inside
// it never binds to, or interposes on, a program's own contend.
#pragma once

#define CONTEND_INTERPOSE_EXPORT __attribute__((visibility("default")))
