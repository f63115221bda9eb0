// The wait backend of the library this test program is linked with, "futex" or "portable",
// set per program by tests/CMakeLists.txt: the same test objects are linked with contend
// and with contend_portable, and platform_test checks that each program got the library
// its name says.
extern const char* const contend_test_expected_wait_backend;
const char* const contend_test_expected_wait_backend = CONTEND_TEST_EXPECTED_WAIT_BACKEND;
