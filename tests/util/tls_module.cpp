// A library with thread-locals (tests/util/loaded_objects_test.cpp): loading it adds a TLS module and
// moves the loader's TLS generation.
thread_local int tls_module_value = 7;
extern "C" int* tls_module_address() { return &tls_module_value; }
