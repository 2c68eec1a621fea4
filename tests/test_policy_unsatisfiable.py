"""Issue 22.6: a policy that could never be satisfied is refused when made, naming both settings."""

from __future__ import annotations

import pytest

from cryptoffload.core.policy import ENV_VAR, Policy


@pytest.mark.parametrize(
    ("require", "deny"),
    [
        (["aes-128-gcm"], ["aes-128-gcm"]),
        (["aes-128-gcm"], ["aes-*"]),
        (["aes-*"], ["aes-128-gcm"]),
        (["aes-128-*"], ["aes-*-gcm"]),
    ],
)
def test_required_and_denied_algorithm_is_refused_naming_both_entries(require, deny):
    with pytest.raises(ValueError, match="require entry") as info:
        Policy(require=require, deny=deny)
    assert repr(require[0]) in str(info.value) and repr(deny[0]) in str(info.value)
    assert "aes-128-gcm" in str(info.value)


def test_disjoint_require_and_deny_globs_are_accepted():
    p = Policy(require=["aes-*-gcm"], deny=["aes-*-cbc"])
    assert p.requires("aes-128-gcm") and p.denies("aes-128-cbc")


def test_min_size_above_max_size_is_refused_naming_both_settings():
    with pytest.raises(ValueError) as info:
        Policy(min_size={"aes-128-gcm": 4096}, max_size={"aes-128-gcm": 1024})
    msg = str(info.value)
    assert "min_size['aes-128-gcm'] = 4096" in msg and "max_size['aes-128-gcm'] = 1024" in msg


def test_min_size_glob_above_max_size_exact_name_is_refused():
    with pytest.raises(ValueError, match=r"min_size\['aes-\*'\] = 512 .*max_size\['aes-128-gcm'\]"):
        Policy(min_size={"aes-*": 512}, max_size={"aes-128-gcm": 256})


def test_equal_min_and_max_size_is_accepted():
    assert Policy(min_size={"sha256": 64}, max_size={"sha256": 64}).limits("sha256") == (64, 64)


def test_engine_section_min_size_above_its_max_size_is_refused():
    with pytest.raises(ValueError) as info:
        Policy(engines={"caam": {"min_size": {"sha256": 900}, "max_size": {"sha256": 100}}})
    msg = str(info.value)
    assert "engines['caam'].min_size['sha256'] = 900" in msg
    assert "engines['caam'].max_size['sha256'] = 100" in msg


def test_engine_section_min_size_above_top_level_max_size_is_refused():
    with pytest.raises(ValueError, match=r"engines\['caam'\]\.min_size.* max_size\['sha256'\]"):
        Policy(max_size={"sha256": 100}, engines={"caam": {"min_size": {"sha256": 900}}})


def test_engine_section_max_size_is_read_with_top_level_min_size():
    p = Policy(
        min_size={"sha256": 900},
        max_size={"sha256": 1000},
        engines={"caam": {"max_size": {"sha256": 4096}}},
    )
    assert p.limits("sha256", engine="caam") == (900, 4096)


def test_unsatisfiable_policy_file_is_refused_at_load(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('require = ["sha256"]\ndeny = ["sha*"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"p\.toml: require entry 'sha256' and deny entry 'sha\*'"):
        Policy.load(path)


def test_unsatisfiable_policy_in_environment_is_refused_naming_the_variable(tmp_path, monkeypatch):
    path = tmp_path / "p.toml"
    path.write_text("[min_size]\nsha256 = 10\n[max_size]\nsha256 = 5\n", encoding="utf-8")
    monkeypatch.setenv(ENV_VAR, str(path))
    with pytest.raises(ValueError, match=rf"{ENV_VAR}=.*min_size\['sha256'\] = 10.*max_size"):
        Policy.from_env()
