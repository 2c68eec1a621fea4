"""Building blocks engines and checks share: curves, FFDHE groups, CTR_DRBG, PKCS#1, KATs."""
