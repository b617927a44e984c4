"""Connection settings: endpoint precedence, the http:// rule, regions, and the API key."""

from __future__ import annotations

from pathlib import Path

import pytest
from clienthelpers import CANARY

from reconciler.client.settings import (
    GLOBAL_HOST,
    REGIONS,
    Endpoint,
    read_api_key,
    resolve_endpoint,
)
from reconciler.emulator.core import EmulatorSettings
from reconciler.errors import ConfigError

NOTHING: dict[str, str] = {}


def resolve(env: dict[str, str] | None = None, **flags: str | None) -> Endpoint:
    args: dict[str, str | None] = {"base_url": None, "region": None, "host": None, "emulator": None, **flags}
    return resolve_endpoint(env=env if env is not None else NOTHING, **args)


def test_emulator_wins_over_every_other_setting() -> None:
    endpoint = resolve({"RECONCILER_BASE_URL": "https://env.example"}, emulator="state.db",
                       base_url="https://flag.example", host="h.example", region="ca-central-1a")
    assert endpoint == Endpoint(base_url=None, emulator_db="state.db")
    assert endpoint.is_emulator


def test_base_url_flag_wins_over_the_environment_host_and_region() -> None:
    endpoint = resolve({"RECONCILER_BASE_URL": "https://env.example"}, base_url="https://flag.example",
                       host="h.example", region="ca-central-1a")
    assert endpoint.base_url == "https://flag.example"


def test_host_and_region_flags_win_over_the_environment_base_url() -> None:
    env = {"RECONCILER_BASE_URL": "https://env.example/"}
    assert resolve(env, host="h.example", region="ca-central-1a").base_url == "https://h.example"
    assert resolve(env, region="ca-central-1a").base_url == "https://api.ca-central-1a.llmops.example"
    assert resolve(env).base_url == "https://env.example"


def test_host_wins_over_region() -> None:
    assert resolve(host="api.custom.example:8443", region="ca-central-1a").base_url == "https://api.custom.example:8443"


@pytest.mark.parametrize("region", REGIONS)
def test_a_region_alone_builds_the_regional_url(region: str) -> None:
    assert resolve(region=region).base_url == f"https://api.{region}.llmops.example"


def test_the_default_region_is_eu_west_1a() -> None:
    assert REGIONS[0] == "eu-west-1a"
    assert GLOBAL_HOST == "api.llmops.example"


def test_an_unknown_region_is_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="eu-west-1a, ca-central-1a"):
        resolve(region="us-east-1")


def test_nothing_configured_says_how_to_configure_and_never_falls_back() -> None:
    with pytest.raises(ConfigError) as info:
        resolve()
    message = str(info.value)
    for hint in ("--base-url", "RECONCILER_BASE_URL", "--region", "--host", "--emulator"):
        assert hint in message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787",
                                 "http://127.3.4.5", "http://LOCALHOST"])
def test_plain_http_is_allowed_to_loopback(url: str) -> None:
    assert resolve(base_url=url).base_url == url


@pytest.mark.parametrize("url", ["http://api.llmops.example", "http://10.0.0.5:8787", "http://[::2]",
                                 "http://localhost.evil.example"])
def test_plain_http_is_refused_to_anything_else(url: str) -> None:
    with pytest.raises(ConfigError, match="plain http:// is refused"):
        resolve(base_url=url)


def test_plain_http_from_the_environment_is_refused_too() -> None:
    with pytest.raises(ConfigError, match="RECONCILER_BASE_URL: plain http://"):
        resolve({"RECONCILER_BASE_URL": "http://api.example"})


def test_a_trailing_v2_is_stripped_from_the_base_url() -> None:
    assert resolve(base_url="https://api.example/v2/").base_url == "https://api.example"
    assert resolve(base_url="https://gw.example/llmops/v2").base_url == "https://gw.example/llmops"


@pytest.mark.parametrize("url", ["ftp://api.example", "api.example", "https://", "https://api.example:99999"])
def test_malformed_base_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="^--base-url: (expected an http\\(s\\) URL with a host|not a valid URL)"):
        resolve(base_url=url)


def test_credentials_in_the_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(ConfigError, match="credentials in the URL are refused") as info:
        resolve(base_url=f"https://user:{CANARY}@api.example")
    assert CANARY not in str(info.value)


def test_a_query_in_the_base_url_is_refused() -> None:
    with pytest.raises(ConfigError, match="the base URL must not carry a query or fragment"):
        resolve(base_url="https://api.example?x=1")


def test_host_takes_a_host_not_a_url() -> None:
    with pytest.raises(ConfigError, match="--base-url"):
        resolve(host="https://api.example")


# ---------------------------------------------------------------- the key


def test_the_key_comes_from_the_environment() -> None:
    assert read_api_key(None, {"RECONCILER_API_KEY": f" {CANARY}\n"}) == CANARY


def test_the_key_file_wins_and_is_stripped(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(f"{CANARY}\n", encoding="utf-8")
    assert read_api_key(str(key_file), {"RECONCILER_API_KEY": "other"}) == CANARY


def test_a_missing_key_says_where_to_put_one() -> None:
    with pytest.raises(ConfigError, match="RECONCILER_API_KEY.*--api-key-file"):
        read_api_key(None, {})


def test_an_unreadable_key_file_names_the_file_not_a_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the key"):
        read_api_key(str(tmp_path / "absent"), {})


def test_an_empty_key_file_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--api-key-file .*: the file is empty"):
        read_api_key(str(key_file), {})


def test_a_key_with_a_line_break_is_refused_without_showing_it(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(f"{CANARY}\nsecond-line\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="printable ASCII on one line") as info:
        read_api_key(str(key_file), {})
    assert CANARY not in str(info.value)


def test_the_emulator_defaults_to_its_admin_key() -> None:
    endpoint = Endpoint(base_url=None, emulator_db="state.db")
    assert read_api_key(None, {}, endpoint=endpoint) == EmulatorSettings().admin_key
    assert read_api_key(None, {"RECONCILER_API_KEY": "reader-key"}, endpoint=endpoint) == "reader-key"


def test_the_emulator_refuses_a_key_it_does_not_know_without_showing_it() -> None:
    endpoint = Endpoint(base_url=None, emulator_db="state.db")
    with pytest.raises(ConfigError, match="unset RECONCILER_API_KEY") as info:
        read_api_key(None, {"RECONCILER_API_KEY": CANARY}, endpoint=endpoint)
    assert CANARY not in str(info.value)


def test_a_real_endpoint_never_defaults_a_key() -> None:
    with pytest.raises(ConfigError, match="^no API key: set RECONCILER_API_KEY or pass --api-key-file FILE$"):
        read_api_key(None, {}, endpoint=Endpoint(base_url="https://api.example", emulator_db=None))
