"""The CAAM job-ring driver: the ring, jobs in flight, transports (model, board), RNG bring-up."""
