"""Policy: limits and their precedence, deny and require lists, TOML load and save."""

from __future__ import annotations

import re

import pytest

from cryptoffload.core.policy import DEFAULT_MIN_SIZE, Policy


def test_default_policy_uses_article_threshold_for_cbc_ctr_ecb_and_none_for_gcm():
    p = Policy()
    assert p.limits("aes-128-cbc") == (256, None)
    assert p.limits("aes-256-ctr") == (256, None)
    assert p.limits("aes-192-ecb") == (256, None)
    assert p.limits("aes-128-gcm") == (0, None)
    assert set(DEFAULT_MIN_SIZE) == {"aes-*-cbc", "aes-*-ctr", "aes-*-ecb"}


def test_policy_value_beats_engine_suggestion_beats_default():
    engine = {"aes-128-cbc": 512, "sha256": 128}
    assert Policy().limits("aes-128-cbc", engine) == (512, None)
    assert Policy(min_size={"aes-128-cbc": 64}).limits("aes-128-cbc", engine) == (64, None)
    assert Policy().limits("sha256", engine) == (128, None)


def test_exact_name_beats_glob_and_longer_glob_beats_shorter():
    p = Policy(min_size={"*": 1, "aes-*": 2, "aes-*-cbc": 3, "aes-128-cbc": 4})
    assert p.limits("aes-128-cbc")[0] == 4
    assert p.limits("aes-256-cbc")[0] == 3
    assert p.limits("aes-256-gcm")[0] == 2
    assert p.limits("sha256")[0] == 1


def test_deny_and_require_accept_globs():
    p = Policy(deny=["sha1", "aes-*-ecb"], require=["aes-*-gcm"])
    assert p.denies("sha1") and p.denies("aes-128-ecb") and not p.denies("sha256")
    assert p.requires("aes-256-gcm") and not p.requires("aes-256-cbc")


def test_toml_round_trip(tmp_path):
    original = Policy(
        min_size={"aes-128-cbc": 1024},
        max_size={"aes-*-gcm": 65536},
        require=["aes-128-gcm"],
        deny=["sha1"],
    )
    path = tmp_path / "p.toml"
    original.save(path)
    assert Policy.load(path) == original
    assert "[min_size]" in path.read_text()


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"min_size": {"aes-128-cbc": -1}}, ValueError, "must be >= 0"),
        ({"min_size": {"aes-128-cbc": "big"}}, TypeError, "str -> int"),
        ({"min_size": [1, 2]}, TypeError, "must map algorithm names"),
        ({"deny": "sha1"}, TypeError, "list of algorithm names"),
        ({"require": [1]}, TypeError, "algorithm names"),
    ],
)
def test_bad_policy_values_are_refused_with_clear_errors(kwargs, exc, message):
    with pytest.raises(exc, match=message):
        Policy(**kwargs)


def test_unknown_key_in_file_is_an_error_not_ignored(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('minsize = {"aes-128-cbc" = 1}\n')
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['minsize'\]"):
        Policy.load(path)


def test_invalid_toml_names_the_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("min_size = [\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        Policy.load(path)


def test_from_env_without_variable_is_default(monkeypatch):
    monkeypatch.delenv("CRYPTOFFLOAD_POLICY", raising=False)
    assert Policy.from_env() == Policy()


# -- names that match no algorithm --------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "entry", "suggested"),
    [
        ({"require": ["aes-999-gcm"]}, "require entry 'aes-999-gcm'", "'aes-192-gcm'"),
        ({"deny": ["sha-256"]}, "deny entry 'sha-256'", "'sha256'"),
        ({"min_size": {"aes-128-cbcc": 64}}, "min_size entry 'aes-128-cbcc'", "'aes-128-cbc'"),
        ({"max_size": {"AES-128-GCM": 64}}, "max_size entry 'AES-128-GCM'", "'aes-128-gcm'"),
        ({"deny": ["drgb"]}, "deny entry 'drgb'", "did you mean 'drbg'?"),
    ],
)
def test_unknown_algorithm_names_are_refused_naming_the_entry_and_close_names(
    kwargs, entry, suggested
):
    with pytest.raises(ValueError, match="is not an algorithm name") as caught:
        Policy(**kwargs)
    assert entry in str(caught.value) and suggested in str(caught.value)


@pytest.mark.parametrize("field", ["require", "deny", "min_size", "max_size"])
def test_glob_matching_no_algorithm_is_refused(field):
    value = {"aes-*-cbcc": 1} if field.endswith("size") else ["aes-*-cbcc"]
    with pytest.raises(ValueError, match=rf"{field} entry 'aes-\*-cbcc' matches no algorithm"):
        Policy(**{field: value})


def test_name_far_from_every_algorithm_says_what_is_expected():
    with pytest.raises(ValueError, match="expected a name like aes-128-gcm"):
        Policy(require=["zzyzx"])


def test_every_algorithm_name_and_glob_that_matches_one_is_accepted():
    from cryptoffload.core.names import all_algorithms

    names = all_algorithms()
    globs = ["*", "aes-*-gcm", "hmac-sha*", "ecdsa-*-sign", "ffdhe*", "rsa-?048-*"]
    # two policies: one requiring every name and denying them by glob could never be satisfied
    required = Policy(require=names, min_size=dict.fromkeys(names + globs, 0))
    denied = Policy(deny=globs, max_size=dict.fromkeys(names + globs, 0))
    assert required.requires("drbg") and denied.denies("rsa-2048-public")


def test_policy_file_with_an_unknown_algorithm_names_the_file_and_entry(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('require = ["aes-256-gcm", "aes-999-gcm"]\n')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: require entry 'aes-999-gcm'"):
        Policy.load(path)
    with pytest.raises(ValueError, match=r"^policy: deny entry 'sha-1'"):
        Policy.from_dict({"deny": ["sha-1"]})


# -- CRYPTOFFLOAD_POLICY ------------------------------------------------------------------------


def test_policy_env_naming_a_missing_file_names_the_variable_and_the_path(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere.toml"
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(missing))
    with pytest.raises(ValueError) as caught:
        Policy.from_env()
    message = str(caught.value)
    assert message.startswith(f"CRYPTOFFLOAD_POLICY={missing}: cannot read the policy file")
    assert "No such file or directory" in message and "unset it" in message


def test_policy_env_naming_a_bad_file_names_the_variable_and_the_entry(monkeypatch, tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('deny = ["sha-1"]\n')
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(path))
    with pytest.raises(
        ValueError, match=rf"^CRYPTOFFLOAD_POLICY={re.escape(str(path))}: deny entry 'sha-1'"
    ):
        Policy.from_env()


def test_policy_env_naming_a_good_file_is_the_policy_in_it(monkeypatch, tmp_path):
    path = tmp_path / "p.toml"
    Policy(deny=["sha1"]).save(path)
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(path))
    assert Policy.from_env() == Policy(deny=["sha1"])


def test_bad_policy_env_raises_on_the_first_operation_and_every_one_after(monkeypatch, tmp_path):
    # The default provider is built on first use: a policy that cannot be read must stop the
    # operation there, with the variable named, rather than run under another policy.
    from cryptoffload import set_default_provider
    from cryptoffload.aead import AESGCM

    missing = tmp_path / "nowhere.toml"
    monkeypatch.setenv("CRYPTOFFLOAD_POLICY", str(missing))
    set_default_provider(None)
    try:
        for _ in range(2):
            with pytest.raises(ValueError, match=re.escape(f"CRYPTOFFLOAD_POLICY={missing}:")):
                AESGCM(bytes(16)).encrypt(bytes(12), b"data", None)
    finally:
        set_default_provider(None)


def test_engine_sections_win_for_their_engine_only():
    p = Policy(
        min_size={"aes-*-cbc": 512},
        max_size={"sha256": 1 << 20},
        engines={"afalg:dev": {"min_size": {"aes-128-cbc": 8192}, "max_size": {"sha256": 4096}}},
    )
    assert p.limits("aes-128-cbc", {"aes-128-cbc": 64}, "afalg:dev") == (8192, None)
    assert p.limits("aes-128-cbc", {"aes-128-cbc": 64}, "caam") == (512, None)
    assert p.limits("sha256", None, "afalg:dev") == (0, 4096)
    assert p.limits("sha256", None, "caam") == (0, 1 << 20)
    zero = Policy(engines={"caam": {"min_size": {"aes-128-cbc": 0}}})
    assert zero.limits("aes-128-cbc", None, "caam") == (0, None)  # 0 beats the 256 B default


def test_engine_sections_exclude_algorithms_and_are_checked_like_the_rest():
    p = Policy(engines={"caam": {"exclude": ["sha*"]}})
    assert p.excludes("sha256", "caam") and not p.excludes("sha256", "afalg")
    assert not p.excludes("aes-128-gcm", "caam")
    with pytest.raises(ValueError, match=r"engines\['caam'\]: unknown key\(s\) \['deny'\]"):
        Policy.from_dict({"engines": {"caam": {"deny": ["sha1"]}}})
    with pytest.raises(ValueError, match="'sha265' is not an algorithm name"):
        Policy(engines={"caam": {"exclude": ["sha265"]}})
    with pytest.raises(TypeError, match="engine name -> table"):
        Policy(engines={"caam": ["sha256"]})


def test_engine_sections_and_calibration_round_trip_and_stay_out_when_unset(tmp_path):
    assert set(Policy().to_dict()) == {"require", "deny", "min_size", "max_size"}
    p = Policy(
        deny=["sha1"],
        engines={"caam": {"min_size": {"aes-128-cbc": 4096}, "exclude": ["sha256"]}},
        calibration={"date": "2026-12-01", "points": [{"size": 16, "ratio": 0.5}]},
    )
    path = tmp_path / "p.toml"
    p.save(path)
    again = Policy.load(path)
    assert again == p and again.calibration == p.calibration
    assert again.to_dict()["engines"] == {
        "caam": {"min_size": {"aes-128-cbc": 4096}, "exclude": ["sha256"]}
    }
