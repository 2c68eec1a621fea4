"""Policy: limits and their precedence, deny and require lists, TOML load and save."""

from __future__ import annotations

import pytest

from cryptoffload.policy import DEFAULT_MIN_SIZE, Policy


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
