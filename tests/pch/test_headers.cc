// The translation unit that owns the tests' precompiled header (tests/CMakeLists.txt:
// autodist_test_pch). It has no code of its own: the header is everything.
