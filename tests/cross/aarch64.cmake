# Cross build for 64-bit ARM Linux, tests run under user-mode QEMU. The runtime's x86 kernels
# sit behind `#if defined(__x86_64__)` guards and are picked at run time (shardgate/cpu.h); this
# build compiles the other side of every guard and runs the suite on a CPU with none of them.
# Debian packages: qemu-user g++-aarch64-linux-gnu, and after `dpkg --add-architecture arm64`:
# libfmt-dev:arm64 zlib1g-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64. The header-only
# dependencies (nlohmann-json, CLI11) come from the host. Commands: README, "Other CPUs".
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# ctest starts every test executable through this; tests/CMakeLists.txt also wraps the two
# validators with it for the CLI tests, which start them through the shell. No `-L
# /usr/aarch64-linux-gnu`: under Debian 12's QEMU 7.2 the first pthread_create of a program
# loaded with that cross C library spins forever (a five-line C program does), while the arm64
# C library that the packages above bring to /lib/aarch64-linux-gnu runs threads.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
