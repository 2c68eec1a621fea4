"""TLS in Python's ``ssl`` through the kernel (kTLS): after OpenSSL's handshake the kernel does the
records, with the crypto API's highest-priority driver for the cipher (on a CAAM board,
``gcm-aes-caam``); connections counted, and the kernel's own figures read as proof."""
