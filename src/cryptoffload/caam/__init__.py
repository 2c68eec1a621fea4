"""NXP CAAM / QorIQ SEC: a functional model of the block, and descriptor tools."""
