"""Known-answer vector loaders over the files shipped in the cryptography_vectors package."""

from __future__ import annotations

import functools
import pathlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec

import cryptography_vectors
from cryptography.hazmat.primitives.hashes import HashAlgorithm

from cryptoffload.core.names import HASH_CLASSES

Record = dict[str, Any]
_P = ParamSpec("_P")

VECTORS_DIR = pathlib.Path(cryptography_vectors.__file__).resolve().parent

_PRIME_CURVE = re.compile(r"^P-\d+$")
_ANY_CURVE = re.compile(r"^[PKB]-\d+$")


def vector_path(relpath: str) -> pathlib.Path:
    """Return the absolute path of ``relpath`` inside the installed cryptography_vectors package."""
    path = (VECTORS_DIR / relpath).resolve()
    if not path.is_relative_to(VECTORS_DIR):
        raise ValueError(f"{relpath!r} escapes the cryptography_vectors directory")
    if not path.exists():
        raise FileNotFoundError(path)
    return path


def _copied(fn: Callable[_P, list[Record]]) -> Callable[_P, list[Record]]:
    """Memoise a loader; hand every caller fresh dicts so the cache cannot be mutated."""
    cached = functools.cache(fn)

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> list[Record]:
        return [dict(r) for r in cached(*args, **kwargs)]

    return wrapper


# --------------------------------------------------------------------------- generic parser


@functools.cache
def _parse(relpath: str, start: tuple[str, ...]) -> tuple[Record, ...]:
    text = vector_path(relpath).read_text(encoding="ascii")
    records: list[Record] = []
    file_params: dict[str, str] = {}
    params: dict[str, str] = {}
    sections: list[str] = []
    shared: dict[str, str] = {}
    group = -1
    in_header = False
    seen_structure = False
    current: Record | None = None

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            current = None
            continue
        if line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = None
            seen_structure = True
            if not in_header:
                group += 1
                params, sections, shared = {}, [], {}
                in_header = True
            body = line[1:-1].strip()
            if "=" in body:
                for part in body.split(","):
                    key, _, value = part.partition("=")
                    params[key.strip().lower()] = value.strip()
            else:
                sections.append(body)
            continue
        in_header = False

        key, eq, value = line.partition("=")
        if not eq:
            # Bare flag such as FAIL; NIST puts it as the last line of its record.
            target = current if current is not None else (records[-1] if records else None)
            if target is not None:
                target[line.lower()] = True
            continue
        key = key.strip().lower()
        value = value.strip()
        if key in start:
            seen_structure = True
            current = {
                **file_params,
                **params,
                "section": sections[-1] if sections else None,
                "sections": tuple(sections),
                "group": group,
                **shared,
            }
            records.append(current)
        if current is not None:
            current[key] = value
        elif not seen_structure:
            file_params[key] = value
        else:
            shared[key] = value
    return tuple(records)


def load_nist(relpath: str, start: str | Sequence[str] = "count") -> list[Record]:
    """Parse a NIST CAVP ``.rsp``/``.fax`` (or look-alike ``.txt``) file into flat records.

    Format: ``# comments``; bracketed headers, either bare (``[ENCRYPT]``, ``[P-256,SHA-256]``,
    ``[EA - SHA1]``) or parameters (``[Keylen = 128]``, ``[Alen = 0, Plen = 0, Nlen = 7]``);
    ``Key = value`` lines; bare flags (``FAIL``); records separated by blank lines.

    A record begins at a line whose lower-cased key is in ``start`` (``COUNT`` by default; files
    without COUNT use their first per-record key, e.g. ``"len"`` for SHA, ``"shaalg"`` for RSA).
    Each record is a dict of lower-cased keys to raw string values, merged in this order:

    * file parameters: ``Key = value`` lines before any header or record (CCM's ``Plen = 24``);
    * bracketed parameters of the current header group, lower-cased (``"keylen"``, ``"l"``,
      ``"mod"``, ``"alen"``...);
    * ``"section"``: the last bare header of the group (or None), ``"sections"``: all bare
      headers of the group as a tuple, ``"group"``: the 0-based index of the header group;
    * shared values: ``Key = value`` lines that sit outside a record in the current group
      (CCM ``Key``/``Nonce``, RSA ``n``, SHA Monte ``Seed``, DH ``P``/``Q``/``G``);
    * the record's own lines, and ``flag: True`` for bare flags (``"fail": True``).

    A header group is a run of bracket lines with no ``Key = value`` line between them; a new
    group clears the previous group's parameters and shared values.
    """
    starts = (start,) if isinstance(start, str) else tuple(start)
    return [dict(r) for r in _parse(relpath, tuple(s.lower() for s in starts))]


def _records(relpath: str, start: str = "count") -> tuple[Record, ...]:
    return _parse(relpath, (start,))


def _files(folder: str, pattern: str) -> list[str]:
    return sorted(p.relative_to(VECTORS_DIR).as_posix() for p in vector_path(folder).glob(pattern))


def _hash_name(name: str) -> str:
    """Normalise ``SHA-256``/``SHA256``/``SHA512_224``/``SHA-512/224`` to hashlib's spelling."""
    return name.strip().lower().replace("-", "").replace("/", "_")


def hash_class(name: str) -> type[HashAlgorithm]:
    """The `cryptography` class of a record's ``hash`` field (hashlib's spelling: sha512_224)."""
    return HASH_CLASSES[name.replace("_", "-")]


def _result(value: str) -> tuple[bool, str]:
    """Decode ``P``, ``Pass``, ``F (3 - S changed)``, ``P (0 )`` into (passed, reason)."""
    verdict, _, rest = value.strip().partition("(")
    verdict = verdict.strip().upper()
    if verdict not in ("P", "PASS", "F", "FAIL"):
        raise ValueError(f"unknown result {value!r}")
    return verdict.startswith("P"), rest.rstrip(")").strip()


def _count(record: Record) -> int | None:
    return int(record["count"]) if "count" in record else None


# --------------------------------------------------------------------------- symmetric ciphers

# mode -> (folder under ciphers/AES, filename glob)
_AES_MODES = {
    "ECB": ("ECB", "ECB*.rsp"),
    "CBC": ("CBC", "CBC*.rsp"),
    "CFB128": ("CFB", "CFB128*.rsp"),
    "OFB": ("OFB", "OFB*.rsp"),
    "CTR": ("CTR", "aes-*-ctr.txt"),
}


@_copied
def aes_vectors(mode: str) -> list[Record]:
    """AES known-answer records for ``mode`` in ECB, CBC, CFB128 (alias CFB), OFB or CTR.

    Formats: CAVP AESAVS ``.rsp`` files (GFSbox, KeySbox, MMT, VarKey, VarTxt; ``[ENCRYPT]`` and
    ``[DECRYPT]`` sections of ``COUNT/KEY/IV/PLAINTEXT/CIPHERTEXT``). There is no CAVP CTR
    set; CTR uses ``aes-{128,192,256}-ctr.txt`` (RFC 3686 vectors in the same layout) where
    ``iv`` is the full initial 16-byte counter block (nonce || IV || 32-bit counter).

    Fields: ``key``, ``iv`` (None for ECB), ``plaintext``, ``ciphertext`` (bytes),
    ``direction`` ("encrypt"/"decrypt"), ``count`` (int), ``file`` (str).
    """
    mode = mode.upper()
    if mode == "CFB":
        mode = "CFB128"
    if mode not in _AES_MODES:
        raise ValueError(f"unsupported AES mode {mode!r}; expected one of {sorted(_AES_MODES)}")
    folder, pattern = _AES_MODES[mode]
    out = []
    for relpath in _files(f"ciphers/AES/{folder}", pattern):
        for r in _records(relpath):
            out.append(
                {
                    "key": bytes.fromhex(r["key"]),
                    "iv": bytes.fromhex(r["iv"]) if "iv" in r else None,
                    "plaintext": bytes.fromhex(r["plaintext"]),
                    "ciphertext": bytes.fromhex(r["ciphertext"]),
                    "direction": r["section"].lower(),
                    "count": _count(r),
                    "file": relpath,
                }
            )
    return out


@functools.cache
def _gcm_all() -> tuple[Record, ...]:
    out = []
    for pattern, direction in (("gcmEncryptExtIV*.rsp", "encrypt"), ("gcmDecrypt*.rsp", "decrypt")):
        for relpath in _files("ciphers/AES/GCM", pattern):
            for r in _records(relpath):
                fail = bool(r.get("fail"))
                out.append(
                    {
                        "key": bytes.fromhex(r["key"]),
                        "iv": bytes.fromhex(r["iv"]),
                        "pt": None if fail else bytes.fromhex(r["pt"]),
                        "aad": bytes.fromhex(r["aad"]),
                        "ct": bytes.fromhex(r["ct"]),
                        "tag": bytes.fromhex(r["tag"]),
                        "fail": fail,
                        "direction": direction,
                        "keylen": int(r["keylen"]),
                        "ivlen": int(r["ivlen"]),
                        "ptlen": int(r["ptlen"]),
                        "aadlen": int(r["aadlen"]),
                        "taglen": int(r["taglen"]),
                        "count": _count(r),
                        "section": (relpath, r["group"]),
                        "file": relpath,
                    }
                )
    return tuple(out)


def gcm_vectors(limit_per_section: int | None = None) -> list[Record]:
    """AES-GCM records from CAVP ``gcmEncryptExtIV{128,192,256}.rsp`` and ``gcmDecrypt*.rsp``.

    Format: sections of ``[Keylen] [IVlen] [PTlen] [AADlen] [Taglen]`` (lengths in bits), then
    ``Count/Key/IV/PT/AAD/CT/Tag``; decrypt records whose tag must be rejected carry ``FAIL``
    instead of ``PT``. IVs are 1, 12 or 128 bytes; tags 4 to 16 bytes.

    Fields: ``key``, ``iv``, ``pt`` (None when ``fail``), ``aad``, ``ct``, ``tag`` (bytes),
    ``fail`` (bool), ``direction`` ("encrypt"/"decrypt"), ``keylen``/``ivlen``/``ptlen``/
    ``aadlen``/``taglen`` (int, bits), ``count`` (int), ``section`` (hashable id of the header
    group), ``file``.

    ``limit_per_section`` keeps the first N records of every section (every file's every
    key/IV/PT/AAD/tag length combination stays covered); None returns all 47,250 records.
    """
    records = _gcm_all()
    if limit_per_section is None:
        return [dict(r) for r in records]
    seen: dict[tuple[str, int], int] = {}
    out = []
    for r in records:
        n = seen.get(r["section"], 0)
        if n < limit_per_section:
            out.append(dict(r))
        seen[r["section"]] = n + 1
    return out


@_copied
def ccm_vectors() -> list[Record]:
    """AES-CCM records from the CAVP CCM files ``{DVPT,VADT,VNT,VPT,VTT}{128,192,256}.rsp``.

    Format: optional file-level ``Alen/Plen/Nlen/Tlen = n`` lines, sections such as
    ``[Alen = 0, Plen = 0, Nlen = 7, Tlen = 4]`` or ``[Plen = 3]`` (lengths in bytes), a shared
    ``Key`` (and in VADT/VPT/VTT a shared ``Nonce``) before the section's records, then
    ``Count/Nonce/Adata/Payload/CT``. Zero-length Adata/Payload are written as ``00``. ``CT`` is
    ciphertext || tag. DVPT (decryption-verification) records carry ``Result = Pass`` with a
    Payload, or ``Result = Fail`` without one.

    Fields: ``key``, ``nonce``, ``aad``, ``pt`` (None when ``fail``), ``ct`` (without tag),
    ``tag`` (bytes), ``fail`` (bool), ``alen``/``plen``/``nlen``/``tlen`` (int, bytes),
    ``test`` ("DVPT", "VADT", "VNT", "VPT", "VTT"), ``direction`` ("decrypt" for DVPT,
    else "encrypt"), ``count`` (int), ``file``.
    """
    out = []
    for test in ("DVPT", "VADT", "VNT", "VPT", "VTT"):
        for bits in (128, 192, 256):
            relpath = f"ciphers/AES/CCM/{test}{bits}.rsp"
            for r in _records(relpath):
                alen, plen = int(r["alen"]), int(r["plen"])
                nlen, tlen = int(r["nlen"]), int(r["tlen"])
                fail = False
                if "result" in r:
                    passed, _ = _result(r["result"])
                    fail = not passed
                ct_tag = bytes.fromhex(r["ct"])
                out.append(
                    {
                        "key": bytes.fromhex(r["key"]),
                        "nonce": bytes.fromhex(r["nonce"]),
                        "aad": bytes.fromhex(r["adata"])[:alen],
                        "pt": None if fail else bytes.fromhex(r["payload"])[:plen],
                        "ct": ct_tag[:plen],
                        "tag": ct_tag[plen:],
                        "fail": fail,
                        "alen": alen,
                        "plen": plen,
                        "nlen": nlen,
                        "tlen": tlen,
                        "test": test,
                        "direction": "decrypt" if test == "DVPT" else "encrypt",
                        "count": _count(r),
                        "file": relpath,
                    }
                )
    return out


# --------------------------------------------------------------------------- hashes and MACs

_SHA_NAMES = ("sha1", "sha224", "sha256", "sha384", "sha512", "sha512_224", "sha512_256")


def _sha_file(name: str, kind: str) -> str:
    name = _hash_name(name)
    if name not in _SHA_NAMES:
        raise ValueError(f"unsupported hash {name!r}; expected one of {_SHA_NAMES}")
    folder = "SHA1" if name == "sha1" else "SHA2"
    return f"hashes/{folder}/{name.upper()}{kind}.rsp"


@_copied
def hash_vectors(name: str) -> list[Record]:
    """SHA-1/SHA-2 message records from CAVP ``{SHA}ShortMsg.rsp`` and ``{SHA}LongMsg.rsp``.

    ``name``: SHA1, SHA224, SHA256, SHA384, SHA512, SHA512_224, SHA512_256 (hyphens, case and
    ``/`` ignored). Format: ``[L = digest bytes]`` then ``Len/Msg/MD``; ``Len`` is the message
    length in bits and ``Len = 0`` comes with a placeholder ``Msg = 00``.

    Fields: ``msg``, ``md`` (bytes), ``len`` (int, bits), ``l`` (int, digest bytes),
    ``kind`` ("ShortMsg"/"LongMsg"), ``file``.
    """
    out = []
    for kind in ("ShortMsg", "LongMsg"):
        relpath = _sha_file(name, kind)
        for r in _records(relpath, "len"):
            bits = int(r["len"])
            out.append(
                {
                    "msg": bytes.fromhex(r["msg"])[: bits // 8],
                    "md": bytes.fromhex(r["md"]),
                    "len": bits,
                    "l": int(r["l"]),
                    "kind": kind,
                    "file": relpath,
                }
            )
    return out


def hash_monte(name: str) -> Record:
    """The SHA-1/SHA-2 Monte Carlo test from CAVP ``{SHA}Monte.rsp``.

    Format: ``[L = digest bytes]``, a ``Seed`` line, then ``COUNT = 0..99`` each with the ``MD``
    expected after that checkpoint. Returns one dict (not a list): ``seed`` (bytes),
    ``checkpoints`` (list of 100 expected digests, index = COUNT), ``l`` (int), ``file``.
    """
    relpath = _sha_file(name, "Monte")
    records = _records(relpath)
    checkpoints = [b""] * len(records)
    for r in records:
        checkpoints[int(r["count"])] = bytes.fromhex(r["md"])
    return {
        "seed": bytes.fromhex(records[0]["seed"]),
        "checkpoints": checkpoints,
        "l": int(records[0]["l"]),
        "file": relpath,
    }


def run_sha_monte(
    seed: bytes, digest_fn: Callable[[bytes], bytes], checkpoints: int = 100
) -> list[bytes]:
    """Run the SHAVS SHA-1/SHA-2 Monte Carlo procedure and return ``checkpoints`` digests.

    For each checkpoint: MD0 = MD1 = MD2 = seed; for i in 3..1002, MDi = H(MDi-3 || MDi-2 ||
    MDi-1); the checkpoint output and the next seed are MD1002. ``digest_fn`` maps a message to
    its digest, e.g. ``lambda m: hashlib.sha256(m).digest()``.
    """
    out = []
    for _ in range(checkpoints):
        a = b = c = seed
        for _ in range(1000):
            a, b, c = b, c, digest_fn(a + b + c)
        seed = c
        out.append(seed)
    return out


_HMAC_FILES = {
    "md5": "HMAC/rfc-2202-md5.txt",
    "sha1": "HMAC/rfc-2202-sha1.txt",
    "sha224": "HMAC/rfc-4231-sha224.txt",
    "sha256": "HMAC/rfc-4231-sha256.txt",
    "sha384": "HMAC/rfc-4231-sha384.txt",
    "sha512": "HMAC/rfc-4231-sha512.txt",
}


@_copied
def hmac_vectors(hash_name: str) -> list[Record]:
    """HMAC records from ``HMAC/rfc-2202-{md5,sha1}.txt`` and ``HMAC/rfc-4231-sha{224..512}.txt``.

    Format: blank-line separated ``Len/Key/Msg/MD`` blocks with interleaved ``#`` comments;
    ``Len`` is the message length in bits. MD is always the full-length MAC (the RFC 4231
    truncation case is absent; the RFC 2202 one is stored untruncated).

    Fields: ``key``, ``msg``, ``mac`` (bytes), ``hash`` (hashlib name), ``file``.
    """
    name = _hash_name(hash_name)
    if name not in _HMAC_FILES:
        raise ValueError(f"unsupported HMAC hash {name!r}; expected one of {sorted(_HMAC_FILES)}")
    relpath = _HMAC_FILES[name]
    return [
        {
            "key": bytes.fromhex(r["key"]),
            "msg": bytes.fromhex(r["msg"])[: int(r["len"]) // 8],
            "mac": bytes.fromhex(r["md"]),
            "hash": name,
            "file": relpath,
        }
        for r in _records(relpath, "len")
    ]


@_copied
def cmac_vectors(keybits: int) -> list[Record]:
    """AES-CMAC records from ``CMAC/nist-800-38b-aes{128,192,256}.txt`` (SP 800-38B examples).

    Format: ``COUNT/KEY/MESSAGE/OUTPUT`` blocks; an empty message is written ``MESSAGE =``.

    Fields: ``key``, ``msg``, ``mac`` (bytes), ``count`` (int), ``file``.
    """
    if keybits not in (128, 192, 256):
        raise ValueError(f"AES key size must be 128, 192 or 256 bits, not {keybits}")
    relpath = f"CMAC/nist-800-38b-aes{keybits}.txt"
    return [
        {
            "key": bytes.fromhex(r["key"]),
            "msg": bytes.fromhex(r["message"]),
            "mac": bytes.fromhex(r["output"]),
            "count": _count(r),
            "file": relpath,
        }
        for r in _records(relpath)
    ]


# --------------------------------------------------------------------------- signatures


@_copied
def rsa_sigver_vectors() -> list[Record]:
    """RSA signature verification records from CAVP ``SigVer15_186-3.rsp``/``SigVerPSS_186-3.rsp``.

    Format (``asymmetric/RSA/FIPS_186-2/``): ``[mod = bits]`` sections, a shared ``n`` (and
    ``p``/``q``) block, then records ``SHAAlg/e/d/Msg/S/SaltVal/Result`` where Result is ``P``
    or ``F (reason)``. Msg is the message itself, hashed with SHAAlg during verification.
    PSS files use a 10-byte salt (``SaltVal``); PKCS#1 v1.5 files write ``SaltVal = 00``.

    Fields: ``n``, ``e`` (int), ``mod`` (int, bits), ``hash`` (hashlib name), ``msg``,
    ``signature`` (bytes), ``padding`` ("pkcs1v15"/"pss"), ``salt_len`` (int, None for v1.5),
    ``result`` (bool, True = valid), ``reason`` (str), ``file``.
    """
    out = []
    for name, padding in (("SigVer15_186-3.rsp", "pkcs1v15"), ("SigVerPSS_186-3.rsp", "pss")):
        relpath = f"asymmetric/RSA/FIPS_186-2/{name}"
        if not (VECTORS_DIR / relpath).exists():
            continue
        for r in _records(relpath, "shaalg"):
            passed, reason = _result(r["result"])
            out.append(
                {
                    "n": int(r["n"], 16),
                    "e": int(r["e"], 16),
                    "mod": int(r["mod"]),
                    "hash": _hash_name(r["shaalg"]),
                    "msg": bytes.fromhex(r["msg"]),
                    "signature": bytes.fromhex(r["s"]),
                    "padding": padding,
                    "salt_len": len(bytes.fromhex(r["saltval"])) if padding == "pss" else None,
                    "result": passed,
                    "reason": reason,
                    "file": relpath,
                }
            )
    return out


_ECDSA_DIR = "asymmetric/ECDSA/FIPS_186-3"


@_copied
def ecdsa_sigver_vectors() -> list[Record]:
    """ECDSA signature verification records (prime curves only) from CAVP ``SigVer.rsp``.

    Format (``asymmetric/ECDSA/FIPS_186-3/SigVer.rsp``): ``[P-256,SHA-384]`` sections, then
    ``Msg/Qx/Qy/R/S/Result`` with Result ``P (0 )`` or ``F (n - reason)``. Msg is the message
    itself. K- and B- curve sections are skipped.

    Fields: ``curve`` ("P-192".."P-521"), ``hash`` (hashlib name), ``msg`` (bytes), ``qx``,
    ``qy``, ``r``, ``s`` (int), ``result`` (bool), ``reason`` (str), ``file``.
    """
    relpath = f"{_ECDSA_DIR}/SigVer.rsp"
    out = []
    for r in _records(relpath, "msg"):
        curve, _, hash_alg = r["section"].partition(",")
        if not _PRIME_CURVE.match(curve):
            continue
        passed, reason = _result(r["result"])
        out.append(
            {
                "curve": curve,
                "hash": _hash_name(hash_alg),
                "msg": bytes.fromhex(r["msg"]),
                "qx": int(r["qx"], 16),
                "qy": int(r["qy"], 16),
                "r": int(r["r"], 16),
                "s": int(r["s"], 16),
                "result": passed,
                "reason": reason,
                "file": relpath,
            }
        )
    return out


@_copied
def ecdsa_pkv_vectors() -> list[Record]:
    """ECDSA public key validation records (prime curves only) from CAVP ``PKV.rsp``.

    Format: ``[P-xxx]`` sections of ``Qx/Qy/Result``; failures are ``F (1 - Q_x or Q_y out of
    range)`` (coordinates may then be wider than the field) or ``F (2 - Point not on curve)``.

    Fields: ``curve``, ``qx``, ``qy`` (int), ``valid`` (bool), ``reason`` (str), ``file``.
    """
    relpath = f"{_ECDSA_DIR}/PKV.rsp"
    out = []
    for r in _records(relpath, "qx"):
        if not _PRIME_CURVE.match(r["section"]):
            continue
        valid, reason = _result(r["result"])
        out.append(
            {
                "curve": r["section"],
                "qx": int(r["qx"], 16),
                "qy": int(r["qy"], 16),
                "valid": valid,
                "reason": reason,
                "file": relpath,
            }
        )
    return out


@_copied
def ecdsa_keypair_vectors() -> list[Record]:
    """ECDSA key pairs (prime curves only) from CAVP ``KeyPair.rsp``, or [] if it is absent.

    Format: ``[P-xxx]`` followed by ``[B.4.2 Key Pair Generation by Testing Candidates]`` and
    ``N = 10``, then ``d/Qx/Qy`` blocks.

    Fields: ``curve``, ``d``, ``qx``, ``qy`` (int), ``file``.
    """
    relpath = f"{_ECDSA_DIR}/KeyPair.rsp"
    if not (VECTORS_DIR / relpath).exists():
        return []
    out = []
    for r in _records(relpath, "d"):
        curve = next(s for s in r["sections"] if _ANY_CURVE.match(s))
        if not _PRIME_CURVE.match(curve):
            continue
        out.append(
            {
                "curve": curve,
                "d": int(r["d"], 16),
                "qx": int(r["qx"], 16),
                "qy": int(r["qy"], 16),
                "file": relpath,
            }
        )
    return out


# --------------------------------------------------------------------------- key agreement

_KAS_HEADER_CURVE = re.compile(r"^Curve selected:\s*(\S+)$")
_KAS_HEADER_SHA = re.compile(r"^SHA\(s\) supported[^:]*:\s*(.*)$")


@functools.cache
def kas_parameter_sets(relpath: str) -> dict[str, dict[str, str]]:
    """Map the parameter-set names in a KAS ``.fax`` header to their curve and hash.

    The header lists ``[EA]`` / ``[Curve selected:  P-192]`` / ``[SHA(s) supported (Used for
    hashing Z):  SHA1]`` triples (FFC files omit the curve line) before the first record.
    Returns e.g. ``{"EA": {"curve": "P-192", "hash": "sha1"}, ...}``.
    """
    sets: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in vector_path(relpath).read_text(encoding="ascii").splitlines():
        line = raw.strip()
        if line.upper().startswith("COUNT"):
            break
        if not (line.startswith("[") and line.endswith("]")):
            continue
        body = line[1:-1].strip()
        if re.fullmatch(r"[A-Z]{2}", body):
            current = sets.setdefault(body, {})
        elif current is not None and (m := _KAS_HEADER_CURVE.match(body)):
            current["curve"] = m.group(1)
        elif current is not None and (m := _KAS_HEADER_SHA.match(body)):
            current["hash"] = _hash_name(m.group(1))
    return sets


def _kas_files(folder: str, stem: str) -> list[tuple[str, str]]:
    return [
        (f"{folder}/{stem}_{role}.fax", role)
        for role in ("init", "resp")
        if (VECTORS_DIR / folder / f"{stem}_{role}.fax").exists()
    ]


@_copied
def ecdh_kas_vectors() -> list[Record]:
    """ECC CDH primitive (static-unified, Z only) records from the CAVP KAS validity tests.

    Files: ``asymmetric/ECDH/KASValidityTest_ECCStaticUnified_NOKC_ZZOnly_{init,resp}.fax``.
    Format: a header mapping parameter sets to curves (EA = P-192, EB = P-224, EC = P-256,
    ED = P-384, EE = P-521), sections ``[EA - SHA1]``, then ``COUNT/dsCAVS/QsCAVSx/QsCAVSy/
    dsIUT/QsIUTx/QsIUTy/Z/CAVSHashZZ/Result`` with Result ``P (0 - Correct)``,
    ``P (13 - Z value should have leading 0 nibble )`` or ``F (n - reason)``.
    Z is the x-coordinate of the shared point, padded to the field size.

    Fields: ``curve``, ``param_set``, ``hash`` (hashlib name), ``role`` ("init"/"resp"),
    ``count`` (int), ``iut_private`` (int, dsIUT), ``iut_qx``/``iut_qy`` (int, IUT public),
    ``peer_private`` (int, dsCAVS), ``peer_qx``/``peer_qy`` (int, CAVS public), ``z``,
    ``hash_z`` (bytes), ``result`` (bool), ``reason`` (str), ``file``.
    """
    out = []
    for relpath, role in _kas_files(
        "asymmetric/ECDH", "KASValidityTest_ECCStaticUnified_NOKC_ZZOnly"
    ):
        sets = kas_parameter_sets(relpath)
        for r in _records(relpath):
            param_set, _, hash_alg = r["section"].partition(" - ")
            passed, reason = _result(r["result"])
            out.append(
                {
                    "curve": sets[param_set]["curve"],
                    "param_set": param_set,
                    "hash": _hash_name(hash_alg),
                    "role": role,
                    "count": _count(r),
                    "iut_private": int(r["dsiut"], 16),
                    "iut_qx": int(r["qsiutx"], 16),
                    "iut_qy": int(r["qsiuty"], 16),
                    "peer_private": int(r["dscavs"], 16),
                    "peer_qx": int(r["qscavsx"], 16),
                    "peer_qy": int(r["qscavsy"], 16),
                    "z": bytes.fromhex(r["z"]),
                    "hash_z": bytes.fromhex(r["cavshashzz"]),
                    "result": passed,
                    "reason": reason,
                    "file": relpath,
                }
            )
    return out


@_copied
def ffc_kas_vectors() -> list[Record]:
    """FFC DH primitive (static, Z only) records from the CAVP KAS validity tests.

    Files: ``asymmetric/DH/KASValidityTest_FFCStatic_NOKC_ZZOnly_{init,resp}.fax``. Format:
    sections ``[FA - SHA1]`` (FA: 1024-bit p / 160-bit q, FB: 2048/224, FC: 2048/256) whose
    domain parameters ``P/Q/G`` follow the header, then ``COUNT/XstatCAVS/YstatCAVS/XstatIUT/
    YstatIUT/Z/CAVSHashZZ/Result`` with Result ``P (0 - Correct)``, ``P (10 - Z value should
    have leading 0 nibble )`` or ``F (n - reason)``. Z is padded to the length of p.

    Fields: ``param_set``, ``hash`` (hashlib name), ``role`` ("init"/"resp"), ``count``,
    ``p``, ``q``, ``g``, ``iut_private``, ``iut_public``, ``peer_private``, ``peer_public``
    (int), ``z``, ``hash_z`` (bytes), ``result`` (bool), ``reason`` (str), ``file``.
    """
    out = []
    for relpath, role in _kas_files("asymmetric/DH", "KASValidityTest_FFCStatic_NOKC_ZZOnly"):
        for r in _records(relpath):
            param_set, _, hash_alg = r["section"].partition(" - ")
            passed, reason = _result(r["result"])
            out.append(
                {
                    "param_set": param_set,
                    "hash": _hash_name(hash_alg),
                    "role": role,
                    "count": _count(r),
                    "p": int(r["p"], 16),
                    "q": int(r["q"], 16),
                    "g": int(r["g"], 16),
                    "iut_private": int(r["xstatiut"], 16),
                    "iut_public": int(r["ystatiut"], 16),
                    "peer_private": int(r["xstatcavs"], 16),
                    "peer_public": int(r["ystatcavs"], 16),
                    "z": bytes.fromhex(r["z"]),
                    "hash_z": bytes.fromhex(r["cavshashzz"]),
                    "result": passed,
                    "reason": reason,
                    "file": relpath,
                }
            )
    return out


def fail_records(records: Iterable[Record]) -> list[Record]:
    """Return the records to be rejected: ``fail`` true or ``result``/``valid`` false."""
    return [
        r
        for r in records
        if r.get("fail") is True or r.get("result") is False or r.get("valid") is False
    ]


@_copied
def ecdsa_rfc6979_vectors() -> list[Record]:
    """RFC 6979 deterministic ECDSA signatures on the prime curves (OpenSSL's evp test file).

    Each record: ``curve`` (``P-192``...), ``hash`` (our name), ``key_pem`` (PKCS#8 PEM bytes),
    ``msg`` (bytes) and ``signature`` (DER bytes). Binary-field curves are left out.
    """
    text = vector_path("asymmetric/ECDSA/RFC6979/evppkey_ecdsa_rfc6979.txt").read_text("ascii")
    keys: dict[str, bytes] = {}
    for name, pem in re.findall(
        r"^PrivateKey=(\S+)\n(-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----)",
        text,
        flags=re.M | re.S,
    ):
        keys[name] = pem.encode("ascii") + b"\n"
    records: list[Record] = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(" = ", 1) for line in block.splitlines() if " = " in line and line[0] != "#"
        )
        if "DigestSign" not in fields or fields.get("NonceType") != "deterministic":
            continue
        key_name = fields["Key"]
        curve = key_name.rsplit("_", 1)[0]
        if not _PRIME_CURVE.match(curve):
            continue
        records.append(
            {
                "curve": curve,
                "hash": _hash_name(fields["DigestSign"]),
                "key_pem": keys[key_name],
                "msg": fields["Input"].strip('"').encode("ascii"),
                "signature": bytes.fromhex(fields["Output"]),
            }
        )
    return records
