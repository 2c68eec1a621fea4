"""The tools over the library: the command line, the self-test and the benchmark."""
