"""The weather skill against a local HTTP server that answers like Open-Meteo does.

The replies in tests/data/open_meteo are Open-Meteo's response format (geocoding search and
forecast with ``current`` and ``daily``); the server hands them out by path and query, records
every request, and can also be slow, wrong or absent.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.agent.registry import Registry
from edge_agentd.skills import register_builtins
from edge_agentd.skills.clock import Clock
from edge_agentd.skills.weather import OpenMeteo, Weather, WeatherError

DATA = Path(__file__).parents[1] / "data" / "open_meteo"
TAIPEI = dt.timezone(dt.timedelta(hours=8), "CST")
CLOCK = Clock(lambda: dt.datetime(2026, 12, 2, 21, 5, tzinfo=TAIPEI))


class FakeOpenMeteo(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.forecast_file = "forecast_taipei.json"
        self.delay_s = 0.0
        self.body: bytes | None = None
        self.status = 200

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: FakeOpenMeteo

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.server.requests.append((url.path, query))
        time.sleep(self.server.delay_s)
        status, body = self.server.status, self.server.body
        if body is None:
            if url.path == "/v1/search":
                name = (
                    "search_taipei.json" if query.get("name") == "Taipei" else "search_nothing.json"
                )
            else:
                name = self.server.forecast_file
                if name == "forecast_out_of_range.json":
                    status = 400
            body = (DATA / name).read_bytes()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting, as the timeout test intends

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep the test output quiet


@pytest.fixture
def server() -> Iterator[FakeOpenMeteo]:
    fake = FakeOpenMeteo()
    thread = threading.Thread(target=fake.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.shutdown()
        fake.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def measure(quantity: str, value: float, unit: str) -> dict[str, Any]:
    """One quantity as the skill reports it."""
    return {"quantity": quantity, "value": value, "unit": unit}


def service(base: str, timeout_s: float = 2.0) -> OpenMeteo:
    return OpenMeteo(f"{base}/v1/search", f"{base}/v1/forecast", timeout_s=timeout_s)


def weather_of(server: FakeOpenMeteo, timeout_s: float = 2.0) -> Weather:
    return Weather(service(server.base, timeout_s), CLOCK)


def test_forecast_for_today_with_current_weather(server: FakeOpenMeteo) -> None:
    result = weather_of(server).weather("Taipei")
    daily = [
        measure("temperature_2m_max", 21.3, "°C"),
        measure("temperature_2m_min", 17.8, "°C"),
        measure("precipitation_sum", 2.4, "mm"),
        measure("precipitation_probability_max", 65, "%"),
        measure("wind_speed_10m_max", 14.2, "km/h"),
    ]
    current = [
        measure("temperature_2m", 19.4, "°C"),
        measure("relative_humidity_2m", 82, "%"),
        measure("wind_speed_10m", 9.7, "km/h"),
    ]
    assert result == {
        "location": "Taipei, Taiwan",
        "latitude": 25.04776,
        "longitude": 121.53185,
        "timezone": "Asia/Taipei",
        "date": "2026-12-02",
        "weekday": "Wednesday",
        "conditions": "slight rain",
        "forecast": daily,
        "now": {"time": "2026-12-02T21:00", "conditions": "overcast", "measures": current},
    }
    (search_path, search), (forecast_path, forecast) = server.requests
    assert search_path == "/v1/search"
    assert search == {"name": "Taipei", "count": "1", "language": "en", "format": "json"}
    assert forecast_path == "/v1/forecast"
    assert forecast["latitude"] == "25.04776"
    assert forecast["start_date"] == forecast["end_date"] == "2026-12-02"
    assert forecast["timezone"] == "auto"
    assert "temperature_2m_max" in forecast["daily"]
    assert "current" in forecast


def test_a_later_date_resolved_by_the_clock(server: FakeOpenMeteo) -> None:
    result = weather_of(server).weather("  Taipei ", "tomorrow")
    assert (result["date"], result["weekday"], result["conditions"]) == (
        "2026-12-03",
        "Thursday",
        "slight rain showers",
    )
    assert "now" not in result
    # a null in the reply is left out rather than reported as a value
    assert [m["quantity"] for m in result["forecast"]] == [
        "temperature_2m_max",
        "temperature_2m_min",
        "precipitation_sum",
        "wind_speed_10m_max",
    ]
    assert "current" not in server.requests[1][1]


def test_unknown_place(server: FakeOpenMeteo) -> None:
    with pytest.raises(WeatherError, match="no place called 'Atlantis' is known"):
        weather_of(server).weather("Atlantis")


@pytest.mark.parametrize(
    ("date", "message"),
    [
        ("8/15", "2026-08-15 is -109 days from today; forecasts cover today up to 15 days ahead"),
        ("in 16 days", "16 days from today"),
        ("the day we met", "cannot read 'the day we met' as a date"),
    ],
)
def test_dates_out_of_reach_are_refused_before_asking(
    server: FakeOpenMeteo, date: str, message: str
) -> None:
    with pytest.raises(WeatherError, match=message):
        weather_of(server).weather("Taipei", date)
    assert server.requests == []


def test_a_date_the_reply_lacks(server: FakeOpenMeteo) -> None:
    with pytest.raises(WeatherError, match="no forecast for 2026-12-10"):
        weather_of(server).weather("Taipei", "2026-12-10")


def test_service_error_reply_is_passed_on(server: FakeOpenMeteo) -> None:
    server.forecast_file = "forecast_out_of_range.json"
    with pytest.raises(WeatherError, match="refused: HTTP 400: Parameter 'start_date' is out"):
        weather_of(server).weather("Taipei")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"<html>oops</html>", 200, "not JSON"),
        (b"[1, 2]", 200, "unexpected shape"),
        (b'{"results": "Taipei"}', 200, "unexpected shape"),
        (b'{"results": [{"name": "Taipei", "latitude": "north"}]}', 200, "gave no latitude"),
        (b'{"error": true, "reason": "down for maintenance"}', 200, "down for maintenance"),
        (b"Bad Gateway", 502, "HTTP 502"),
        (b"x" * (1 << 20) + b"x", 200, "oversized reply"),
    ],
)
def test_bad_replies(server: FakeOpenMeteo, body: bytes, status: int, message: str) -> None:
    server.body, server.status = body, status
    with pytest.raises(WeatherError, match=message):
        weather_of(server).weather("Taipei")


def test_a_slow_service_times_out(server: FakeOpenMeteo) -> None:
    server.delay_s = 1.0
    started = time.monotonic()
    with pytest.raises(WeatherError, match=r"did not answer within 0\.2 s"):
        weather_of(server, timeout_s=0.2).weather("Taipei")
    assert time.monotonic() - started < 0.9


def test_offline_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on that port now: the connection is refused, as when the device is offline.
    weather = Weather(service(f"http://127.0.0.1:{port}"), CLOCK)
    with pytest.raises(WeatherError, match=r"unreachable \(is the device offline\?\)"):
        weather.weather("Taipei")


@pytest.mark.parametrize(
    ("location", "message"), [("", "1 to 100"), (" \n ", "1 to 100"), ("x" * 101, "1 to 100")]
)
def test_bad_locations(server: FakeOpenMeteo, location: str, message: str) -> None:
    with pytest.raises(WeatherError, match=message):
        weather_of(server).weather(location)
    assert server.requests == []


def test_service_urls_must_be_http() -> None:
    with pytest.raises(ValueError, match="must be http"):
        OpenMeteo(geocoding_url="file:///etc/passwd")
    with pytest.raises(ValueError, match="timeout_s"):
        OpenMeteo(timeout_s=0)


def test_weather_is_off_unless_enabled(server: FakeOpenMeteo) -> None:
    off = Registry()
    register_builtins(off)
    assert "weather" not in off
    on = Registry()
    register_builtins(on, weather=service(server.base), clock=CLOCK)
    spec = on.get("weather")
    assert spec is not None and spec.timeout_s == 10.0 and spec.source == "builtin"
    result = on.call(spec, spec.validate_arguments({"location": "Taipei", "date": "tomorrow"}))
    assert result["date"] == "2026-12-03"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(location=st.text(max_size=120), date=st.none() | st.text(max_size=30))
def test_any_location_and_date_give_a_forecast_or_a_weather_error(
    server: FakeOpenMeteo, location: str, date: str | None
) -> None:
    try:
        result = weather_of(server).weather(location, date)
    except WeatherError as exc:
        assert str(exc)
        return
    assert result["location"] == "Taipei, Taiwan"
    json.dumps(result)
