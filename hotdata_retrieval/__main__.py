"""``python -m hotdata_retrieval`` runs the ``hdq`` command line."""

from hotdata_retrieval.cli import main

if __name__ == "__main__":
    main()
