# Read by cpack before it makes a package (CPACK_PROJECT_CONFIG_FILE, install.cmake).
# The Debian package's Depends come only from dpkg-shlibdeps (dpkg-dev), which CPack runs on
# the executables it finds with `file`. Without `file` CPack stops with a message naming
# neither package to install; without dpkg-shlibdeps it only prints a note and makes a package
# with no Depends at all, which apt installs anywhere and whose tools then fail to start
# (libfmt.so missing). Both are refused here, naming the packages.
if(CPACK_GENERATOR STREQUAL "DEB")
  find_program(SG_DPKG_SHLIBDEPS dpkg-shlibdeps)
  find_program(SG_FILE_PROGRAM file)
  if(NOT SG_DPKG_SHLIBDEPS OR NOT SG_FILE_PROGRAM)
    message(FATAL_ERROR "shardgate: the Debian package's dependencies come from dpkg-shlibdeps, "
                        "run on the executables `file` finds: apt-get install -y dpkg-dev file")
  endif()
endif()
