"""Known-answer vectors for the self-test, taken from NIST CAVP and RFC suites (see each entry)."""

from __future__ import annotations

# (key, iv, plaintext, ciphertext), hex. SP 800-38A / AESAVS MMT files; CTR from RFC 3686.
CIPHER: dict[str, tuple[str, str, str, str]] = {
    "aes-128-ecb": (
        "7723d87d773a8bbfe1ae5b081235b566",
        "",
        "1b0a69b7bc534c16cecffae02cc5323190ceb413f1db3e9f0f79ba654c54b60e",
        "ad5b089515e7821087c61652dc477ab1f2cc6331a70dfc59c9ffb0c723c682f6",
    ),
    "aes-256-ecb": (
        "7a52e4d342aa07255a7e7c34266cf7302abe2d4dd7ec4468a46187ee61825ffa",
        "",
        "7e771c6ee4b26db89050e982ba7e9803c8da34606434dd85d2910e538076d001",
        "a91d8b2ddf37520bc469470ad0dd6394923143ce55386beb1f9c4bd51584658e",
    ),
    "aes-128-cbc": (
        "0700d603a1c514e46b6191ba430a3a0c",
        "aad1583cd91365e3bb2f0c3430d065bb",
        "068b25c7bfb1f8bdd4cfc908f69dffc5ddc726a197f0e5f720f730393279be91",
        "c4dc61d9725967a3020104a9738f23868527ce839aab1752fd8bdb95a82c4d00",
    ),
    "aes-256-cbc": (
        "dce26c6b4cfb286510da4eecd2cffe6cdf430f33db9b5f77b460679bd49d13ae",
        "fdeaa134c8d7379d457175fd1a57d3fc",
        "50e9eee1ac528009e8cbcd356975881f957254b13f91d7c6662d10312052eb00",
        "2fa0df722a9fd3b64cb18fb2b3db55ff2267422757289413f8f657507412a64c",
    ),
    "aes-128-cfb": (
        "701ccc4c0e36e512ce077f5af6ccb957",
        "5337ddeaf89a00dd4d58d860de968469",
        "cc1172f2f80866d0768b25f70fcf6361aab7c627c8488f97525d7d88949beeea",
        "cdcf093bb7840df225683b58a479b00d5de5553a7e85eae4b70bf46dc729dd31",
    ),
    "aes-256-cfb": (
        "ae59254c66d8f533e7f5002ced480c33984a421d7816e27be66c34c19bfbc2a8",
        "821dd21653ece3af675cd25d26017ae3",
        "3cb4f17e775c2d6d06dd60f15d6c3a103e5131727f9c6cb80d13e00f316eb904",
        "ae375db9f28148c460f6c6b6665fcc2ff6b50b8eaf82c64bba8c649efd4731bc",
    ),
    "aes-128-ofb": (
        "c9f4ce21b4c7daaa4f93e292dc605bc5",
        "5e5a8cf2808c720e01c1ed92d470a45d",
        "8e19c5cacd015a662e7f40cdecadbf79a68081c06d9544b41c2dd248e77633b4",
        "885dc48add7ee6a1839bc5c5e03beae071301ecf91a0111520cde0d3a112f5d2",
    ),
    "aes-256-ofb": (
        "a92577607968dbeee135a24edc2f3263926d97141f2c6d9f96c0012f45d1b3b0",
        "97bfebec0c2e7704d002dc6a1fd36901",
        "bb28705ef9e5151afc73e3886f25f52175dbb57ae36eacc5ac4e989b9d69bff9",
        "944169b510b2825505a14b22eaba744c19ee30da6ed697e3b879425f26808289",
    ),
    "aes-128-ctr": (
        "7e24067817fae0d743d6ce1f32539163",
        "006cb6dbc0543b59da48d90b00000001",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "5104a106168a72d9790d41ee8edad388eb2e1efc46da57c8fce630df9141be28",
    ),
}

# (key, nonce, plaintext, aad, ciphertext, tag): gcmEncryptExtIV128.rsp.
GCM = (
    "c939cc13397c1d37de6ae0e1cb7c423c",
    "b3d8cc017cbb89b39e0f67e2",
    "c3b3c41f113a31b73d9a5cd432103069",
    "24825602bd12a984e0092d3e448eda5f",
    "93fe7d9e9bfd10348a5606e5cafa7354",
    "0032a1dc85f1c9786925a2e71d8272dd",
)

# (key, nonce, plaintext, aad, ciphertext, tag): CCM VADT128.rsp / VPT128.rsp.
CCM = (
    "a7aa635ea51b0bb20a092bd5573e728c",
    "5a8aa485c316e9",
    "a265480ca88d5f536db0dc6abc40faf0d05be7a966977768",
    "3796cf51b8726652a4204733b8fbb047cf00fb91a9837e22ec22b1a268f88e2c",
    "b351ab96b2e45515254558d5212673ee6c776d42dbca3b51",
    "2cf3a20b7fd7c49e6e79bef475c2906f",
)

# name -> (message, digest): SHAVS ShortMsg files.
HASH: dict[str, tuple[str, str]] = {
    "sha1": ("36", "c1dfd96eea8cc2b62785275bca38ac261256e278"),
    "sha224": ("84", "3cd36921df5d6963e73739cf4d20211e2d8877c19cff087ade9d0e3a"),
    "sha256": ("d3", "28969cdfa74a12c82f3bad960b0b000aca2ac329deea5c2328ebc6f2ba9802c1"),
    "sha384": (
        "c5",
        "b52b72da75d0666379e20f9b4a79c33a329a01f06a2fb7865c9062a28c1de860ba432edfd86b4cb1cb8a75b46076e3b1",
    ),
    "sha512": (
        "21",
        "3831a6a6155e509dee59a7f451eb35324d8f8f2df6e3708894740f98fdee23889f4de5adb0c5010dfb555cda77c8ab5dc902094c52de3278f35a75ebc25f093a",
    ),
    "sha512-224": ("cf", "4199239e87d47b6feda016802bf367fb6e8b5655eff6225cb2668f4a"),
    "sha512-256": ("fa", "c4ef36923c64e51e875720e550298a5ab8a3f2f875b1e1a4c9b95babf7344fef"),
}

# name -> (key, message, tag): RFC 4231 / RFC 2202 test case 2.
HMAC: dict[str, tuple[str, str, str]] = {
    "hmac-sha1": (
        "4a656665",
        "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
    ),
    "hmac-sha224": (
        "4a656665",
        "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
        "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
    ),
    "hmac-sha256": (
        "4a656665",
        "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    ),
    "hmac-sha384": (
        "4a656665",
        "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
        "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
    ),
    "hmac-sha512": (
        "4a656665",
        "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
    ),
}

# (key, message, tag): SP 800-38B example (AES-128, one block).
CMAC = (
    "2b7e151628aed2a6abf7158809cf4f3c",
    "6bc1bee22e409f96e93d7e117393172a",
    "070a16b46b4d4144f79bdd9dd04a287c",
)
