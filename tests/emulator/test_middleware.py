"""The emulator's outer layer over a real socket: the per-key rate limit (429 problem with an honest
Retry-After), seeded fault injection (5xx, connection resets, writes that committed but answered
5xx) and request statistics keyed by route template."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from reconciler.emulator.app import create_app
from reconciler.emulator.core import Emulator, EmulatorSettings
from reconciler.emulator.middleware import ConnectionDropped, FaultSpec, RateLimiter
from reconciler.providers import PROVIDERS

Factory = Callable[..., tuple[str, Emulator]]
NO_FAULTS = {"X-Emulator-No-Faults": "1"}
ADMIN, READER = EmulatorSettings().admin_key, EmulatorSettings().reader_key


def client(url: str, key: str = ADMIN) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=10)


def space_id(emu: Emulator) -> str:
    return str(emu.store.scan("space", limit=1)[0][1]["id"])


def prompt_body(emu: Emulator, name: str) -> dict[str, Any]:
    return {
        "space_id": space_id(emu),
        "name": name,
        "version": {
            "commit_message": "first",
            "provider": next(iter(PROVIDERS)),
            "messages": [{"role": "user", "content": "Hello {name}"}],
        },
    }


def prompt_exists(api: httpx.Client, name: str) -> bool:
    found = api.get("/v2/prompts", params={"name": name}, headers=NO_FAULTS).json()["prompts"]
    return any(p["name"] == name for p in found)


def until_rate_limited(api: httpx.Client, path: str = "/v2/prompts") -> httpx.Response:
    for _ in range(200):
        response = api.get(path)
        if response.status_code == 429:
            return response
        assert response.status_code == 200
    raise AssertionError("the rate limit never answered 429")


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert isinstance(body["title"], str) and body["title"]
    return body


# ---------------------------------------------------------------- rate limit


@pytest.fixture
def limited(emulator_factory: Factory) -> Iterator[tuple[str, httpx.Client]]:
    url, _ = emulator_factory(rate_limit=5)
    with client(url) as api:
        yield url, api


def test_requests_beyond_the_rate_limit_get_a_429_problem_with_an_integer_retry_after(
    limited: tuple[str, httpx.Client],
) -> None:
    response = until_rate_limited(limited[1])

    body = assert_problem(response, 429)
    assert body["title"] == "Rate limit exceeded"
    assert body["type"].endswith("#rate-limit-exceeded")
    assert re.fullmatch(r"\d+", response.headers["Retry-After"])


def test_waiting_retry_after_seconds_lets_the_next_request_through(limited: tuple[str, httpx.Client]) -> None:
    api = limited[1]
    retry_after = int(until_rate_limited(api).headers["Retry-After"])

    time.sleep(retry_after)

    assert api.get("/v2/prompts").status_code == 200


def test_another_key_is_not_limited_when_one_key_is(limited: tuple[str, httpx.Client]) -> None:
    url, api = limited
    until_rate_limited(api)

    with client(url, READER) as other:
        assert other.get("/v2/prompts").status_code == 200


def test_the_openapi_document_is_not_rate_limited(limited: tuple[str, httpx.Client]) -> None:
    api = limited[1]
    until_rate_limited(api)

    assert api.get("/v2/openapi.json").status_code == 200


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("rate", [0.3, 0.5, 1, 2.5, 7, 100])
def test_retry_after_is_the_shortest_whole_wait_that_frees_a_token(rate: float) -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate, clock)
    checked = 0
    for step in range(40):
        clock.now += (step % 7) * 0.13
        for _ in range(int(rate) + 2):  # more than the bucket holds: this step meets the limit
            retry_after = limiter.acquire("k")
            if retry_after is not None:
                break
        assert retry_after is not None, "the bucket never emptied"
        assert retry_after >= 1
        clock.now += retry_after - 1
        assert limiter.acquire("k") is not None, "a shorter whole wait would have been enough"
        clock.now += 1
        assert limiter.acquire("k") is None
        checked += 1
    assert checked == 40


def test_rejected_requests_take_no_token() -> None:
    clock = FakeClock()
    limiter = RateLimiter(0.5, clock)
    assert limiter.acquire("k") is None
    first = limiter.acquire("k")

    for _ in range(10):
        assert limiter.acquire("k") == first
    clock.now += 2

    assert limiter.acquire("k") is None


def test_the_bucket_holds_at_least_one_request_and_at_most_one_second_of_them() -> None:
    slow, fast = RateLimiter(0.2, FakeClock()), RateLimiter(3, FakeClock())

    assert [slow.acquire("k") is None for _ in range(2)] == [True, False]
    assert [fast.acquire("k") is None for _ in range(4)] == [True, True, True, False]


def test_a_burst_sets_the_bucket_s_size_and_a_429_still_tells_the_honest_whole_seconds(
        emulator_factory: Factory) -> None:
    clock = FakeClock()
    small = RateLimiter(50, clock, capacity=5)
    assert [small.acquire("k") is None for _ in range(6)] == [True] * 5 + [False]
    clock.now += 0.021  # one token back
    assert small.acquire("k") is None and small.acquire("k") == 1
    url, _ = emulator_factory(rate_limit=50, rate_burst=5)
    with client(url) as api:
        statuses = [api.get("/v2/spaces").status_code for _ in range(12)]
    assert statuses[:5] == [200] * 5 and 429 in statuses[5:]


@pytest.mark.parametrize("burst", [0, 0.5, float("inf")])
def test_a_burst_under_one_request_is_refused_at_startup(burst: float) -> None:
    with pytest.raises(ValueError, match="rate_burst must be a number of requests of at least 1"):
        create_app(Emulator(EmulatorSettings(rate_limit=5, rate_burst=burst)))


@pytest.mark.parametrize("rate", [0, -1, float("inf")])
def test_a_rate_limit_that_is_not_positive_is_refused_at_startup(rate: float) -> None:
    with pytest.raises(ValueError, match="rate_limit must be a positive number of requests per second"):
        create_app(Emulator(EmulatorSettings(rate_limit=rate)))


# ---------------------------------------------------------------- faults


FAULTS = "seed={seed},reset_rate=0.2,error_rate=0.2,commit_then_fail_rate=0.3,latency_ms=1"


def run_fault_script(url: str, emu: Emulator) -> list[str]:
    """The same requests in the same order; each outcome as ok, reset, error (a 5xx that changed
    nothing) or commit_then_fail (a 5xx after which the write is found committed)."""
    outcomes: list[str] = []
    with client(url) as api:
        for i in range(36):
            name = f"fault-probe-{i}"
            try:
                if i % 3 == 0:
                    response = api.get("/v2/prompts", params={"limit": 5})
                else:
                    response = api.post("/v2/prompts", json=prompt_body(emu, name))
            except httpx.TransportError:
                assert i % 3 == 0 or not prompt_exists(api, name), "a reset write must not commit"
                outcomes.append("reset")
                continue
            if response.status_code < 300:
                outcomes.append("ok")
                continue
            assert_problem(response, response.status_code)
            assert response.status_code in (500, 503)
            committed = i % 3 != 0 and prompt_exists(api, name)
            outcomes.append("commit_then_fail" if committed else "error")
    return outcomes


def test_the_same_seed_gives_the_same_sequence_of_outcomes(emulator_factory: Factory) -> None:
    first = run_fault_script(*emulator_factory(faults=FAULTS.format(seed=7)))
    again = run_fault_script(*emulator_factory(faults=FAULTS.format(seed=7)))
    other = run_fault_script(*emulator_factory(faults=FAULTS.format(seed=8)))

    assert first == again
    assert first != other


def test_every_fault_kind_occurs_and_commit_then_fail_commits_the_write(emulator_factory: Factory) -> None:
    outcomes = run_fault_script(*emulator_factory(faults=FAULTS.format(seed=7)))

    assert {"ok", "reset", "error", "commit_then_fail"} <= set(outcomes)


def test_a_reset_is_a_transport_error_not_an_http_response(emulator_factory: Factory) -> None:
    url, _ = emulator_factory(faults="reset_rate=1")

    with client(url) as api, pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
        api.get("/v2/prompts")


def test_requests_marked_no_faults_are_spared(emulator_factory: Factory) -> None:
    url, _ = emulator_factory(faults="error_rate=1")

    with client(url) as api:
        assert api.get("/v2/prompts", headers=NO_FAULTS).status_code == 200
        assert api.get("/v2/prompts").status_code >= 500


def test_faults_never_touch_the_openapi_document_or_the_emulator_endpoints(emulator_factory: Factory) -> None:
    url, _ = emulator_factory(faults="reset_rate=1")

    with client(url) as api:
        assert api.get("/v2/openapi.json").status_code == 200
        assert api.get("/_emulator/stats").status_code == 200
        assert api.post("/_emulator/reset-stats").status_code == 204


def test_in_process_a_reset_surfaces_as_an_exception() -> None:
    emu = Emulator(EmulatorSettings(faults="reset_rate=1"))

    async def call() -> None:
        transport = httpx.ASGITransport(app=create_app(emu))
        async with httpx.AsyncClient(transport=transport, base_url="http://emulator") as api:
            await api.get("/v2/prompts", headers={"Authorization": f"Bearer {ADMIN}"})

    with pytest.raises(ConnectionDropped, match=r"^injected fault: connection reset$"):
        asyncio.run(call())
    emu.store.close()


def test_a_fault_spec_parses_every_key() -> None:
    spec = FaultSpec.parse("seed=7, error_rate=0.05,reset_rate=0.02,latency_ms=20,commit_then_fail_rate=0.05")

    assert spec == FaultSpec(seed=7, error_rate=0.05, reset_rate=0.02, latency_ms=20, commit_then_fail_rate=0.05)
    assert spec.active


@pytest.mark.parametrize("text", [None, "", "seed=3"])
def test_a_fault_spec_without_rates_or_latency_injects_nothing(text: str | None) -> None:
    assert not FaultSpec.parse(text).active


@pytest.mark.parametrize(("text", "message"), [
    ("explode_rate=0.1", "unknown key 'explode_rate'; known keys: seed, error_rate"),
    ("error_rate", "expected KEY=VALUE"),
    ("error_rate=lots", "error_rate must be a number"),
    ("seed=1.5", "seed must be an integer"),
    ("error_rate=1.5", "error_rate must be between 0 and 1"),
    ("error_rate=0.6,reset_rate=0.6", "must not exceed 1"),
    ("latency_ms=-5", "latency_ms must be a non-negative number"),
    ("seed=1,seed=2", "'seed' given twice"),
])
def test_a_bad_fault_spec_is_refused_with_a_clear_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        FaultSpec.parse(text)


def test_a_bad_fault_spec_is_refused_when_the_app_is_built() -> None:
    with pytest.raises(ValueError, match="unknown key"):
        create_app(Emulator(EmulatorSettings(faults="seed=1,nonsense=2")))


# ---------------------------------------------------------------- stats


def stats(api: httpx.Client) -> dict[str, int]:
    response = api.get("/_emulator/stats")
    assert response.status_code == 200
    counts: dict[str, int] = response.json()["requests"]
    return counts


def test_stats_count_requests_by_method_and_route_template(emulator_factory: Factory) -> None:
    url, emu = emulator_factory()
    with client(url) as api, httpx.Client(base_url=url) as anonymous:
        created = api.post("/v2/prompts", json=prompt_body(emu, "counted"))
        api.get(f"/v2/prompts/{created.json()['id']}")
        api.get("/v2/prompts/no-such-prompt")
        api.get("/v2/prompts")
        anonymous.get("/v2/prompts")
        api.get("/v2/no-such-thing")

        assert stats(api) == {
            "POST /v2/prompts": 1,
            "GET /v2/prompts/{prompt_id}": 2,
            "GET /v2/prompts": 2,
            "GET /v2/no-such-thing": 1,
        }


def test_rate_limited_and_faulted_requests_are_counted(emulator_factory: Factory) -> None:
    url, _ = emulator_factory(rate_limit=3, faults="error_rate=1")
    with client(url) as api:
        statuses = [api.get("/v2/prompts").status_code for _ in range(6)]

        assert 429 in statuses and any(s >= 500 for s in statuses)
        assert stats(api) == {"GET /v2/prompts": 6}


def test_reset_stats_clears_the_counts(server: tuple[str, Emulator]) -> None:
    with client(server[0]) as api:
        api.get("/v2/prompts")

        assert api.post("/_emulator/reset-stats").status_code == 204
        assert stats(api) == {}


def test_the_control_endpoints_need_the_admin_key_and_answer_other_methods_with_405(
        server: tuple[str, Emulator]) -> None:
    """Any local process (or a web page a browser on the machine opens) could otherwise read the
    counts, clear them, or inject faults into the writes of a real run."""
    url, emu = server
    with httpx.Client(base_url=url) as anonymous, httpx.Client(
            base_url=url, headers={"Authorization": "Bearer reader-key"}) as reader, httpx.Client(
            base_url=url, headers={"Authorization": "Bearer not-a-key"}) as stranger, client(url) as admin:
        admin.get("/v2/prompts")
        for caller, status in ((anonymous, 401), (stranger, 401), (reader, 403)):
            assert_problem(caller.get("/_emulator/stats"), status)
            assert_problem(caller.post("/_emulator/reset-stats"), status)
            assert_problem(caller.post("/_emulator/faults", json={"route": "GET /v2/prompts", "status": 500}), status)
            assert_problem(caller.delete("/_emulator/faults"), status)
        assert stats(admin) == {"GET /v2/prompts": 1}  # nothing was cleared
        assert admin.get("/v2/prompts").status_code == 200  # no fault was injected
        assert admin.post("/_emulator/reset-stats").status_code == 204
        assert_problem(admin.delete("/_emulator/stats"), 405)
