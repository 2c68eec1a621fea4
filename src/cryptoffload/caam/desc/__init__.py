"""The CAAM descriptor language: words, encoding, builder, decoder, disassembler, S/G tables."""
