// The inputs of one run, so that no output of the run is ever written over one of them
// (README "Hostile input: limits, memory budget, outputs", Outputs). Every file the tools read
// goes through one open (io.cpp), which notes it here; every shard opened notes its directory;
// every write (write_file_atomic) asks here first. So the list is complete by construction: a
// report over a chain manifest, a gate file, a golden file, a plan dump, an --input tensor, a
// report being re-read or any file inside a shard is refused, whoever added the option.
//
// Identity is by device and inode, not by spelling: ./x, a/../x, a symbolic link to x and a
// hard link to x are all x. A shard directory is an input as a whole: nothing is written into it.
//
// Off until enable(): the executables enable it in main(); a library user (the Python
// package) runs many things in one process and writes what it likes.
#pragma once

#include "shardgate/status.h"

#include <string>

struct stat;

namespace sg::run_inputs {

void enable();

// An output the command will write, before it runs: `option` ("--json") names it in messages.
// Reading a planned output as an input later (note_file) is then refused at once, before any
// work is done.
void plan_output(const std::string& option, const std::string& path);
// A directory the command will write files into (--out DIR): refused at once when it is or
// lies inside a shard the run reads (note_tree). Its files are checked one by one as written,
// since a directory may hold inputs the run does not overwrite (exec --input x=DIR/x.npy).
void plan_output_dir(const std::string& option, const std::string& dir);

// `path` (stat `st`) was opened for reading. A usage error when it is a planned output.
Status note_file(const std::string& path, const struct stat& st);
// `dir` is a shard (or another input directory every file of which belongs to the run).
// A usage error when a planned output (file or directory) lies inside it.
Status note_tree(const std::string& dir);

// Whether `path` is a planned output that note_file or note_tree refused as an input. The
// error report of the run that refusal ended is then not written (write_reports): checked
// again at the write, the target printed a second usage error for the one cause.
bool refused(const std::string& path);

// Before writing `path`: a usage error naming both when it is an input file of this run or
// lies inside an input directory. "-" and paths that are not regular files pass.
Status check_output(const std::string& path);

}  // namespace sg::run_inputs
