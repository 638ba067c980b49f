"""The SQL worker process's entry point, run as ``__main__`` with the arguments ``<socket fd>
<lifeline fd> <owner pid>`` (:mod:`~hotdata_retrieval.engines._worker`).

A module of its own, which nothing imports, so that running it imports the library's modules
once and the caller's ``__main__`` never."""

import sys

from hotdata_retrieval.engines._worker import worker_main

if __name__ == "__main__":
    worker_main(sys.argv[1:])
