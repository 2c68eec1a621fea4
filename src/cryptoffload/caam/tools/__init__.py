"""The CAAM command-line tools: ``cryptoffload caam`` and its descriptor workbench."""
