"""A functional model of the CAAM / QorIQ SEC block: registers, job rings, DMA memory, DECOs."""
