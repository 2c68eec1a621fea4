"""The start-up folder `cryptoffload run` puts first on a child process's PYTHONPATH."""
