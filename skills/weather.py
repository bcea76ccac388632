"""The ``weather`` skill: Open-Meteo's geocoding, then its forecast, over the standard library.

It sends the place name off the device, so it is off unless the config enables it. Every way the
service can fail (offline, slow, an error reply, a reply of the wrong shape) becomes a
:class:`WeatherError` whose message says which.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import urllib.error
import urllib.parse
from typing import Any

from edge_agentd.skills.clock import WEEKDAYS, Clock

GEOCODING_URL = "https://geocoding-api.open-meteo.com/v1/search"
FORECAST_URL = "https://api.open-meteo.com/v1/forecast"
FORECAST_DAYS = 16
"""Open-Meteo forecasts today and the 15 days after it."""
MAX_RESPONSE_BYTES = 1 << 20
MAX_LOCATION_CHARS = 100
DAILY = (
    "weather_code",
    "temperature_2m_max",
    "temperature_2m_min",
    "precipitation_sum",
    "precipitation_probability_max",
    "wind_speed_10m_max",
)
CURRENT = ("temperature_2m", "relative_humidity_2m", "weather_code", "wind_speed_10m")

# WMO weather interpretation codes, as Open-Meteo documents them.
WMO_CODES = {
    0: "clear sky",
    1: "mainly clear",
    2: "partly cloudy",
    3: "overcast",
    45: "fog",
    48: "depositing rime fog",
    51: "light drizzle",
    53: "moderate drizzle",
    55: "dense drizzle",
    56: "light freezing drizzle",
    57: "dense freezing drizzle",
    61: "slight rain",
    63: "moderate rain",
    65: "heavy rain",
    66: "light freezing rain",
    67: "heavy freezing rain",
    71: "slight snowfall",
    73: "moderate snowfall",
    75: "heavy snowfall",
    77: "snow grains",
    80: "slight rain showers",
    81: "moderate rain showers",
    82: "violent rain showers",
    85: "slight snow showers",
    86: "heavy snow showers",
    95: "thunderstorm",
    96: "thunderstorm with slight hail",
    99: "thunderstorm with heavy hail",
}


class WeatherError(Exception):
    """The forecast could not be had; the message says why, in words for the model."""


@dataclasses.dataclass(frozen=True)
class OpenMeteo:
    """Where the weather skill asks, and how long it waits for each answer."""

    geocoding_url: str = GEOCODING_URL
    forecast_url: str = FORECAST_URL
    timeout_s: float = 4.0
    language: str = "en"

    def __post_init__(self) -> None:
        for url in (self.geocoding_url, self.forecast_url):
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"weather service URL must be http(s): {url!r}")
        if not (isinstance(self.timeout_s, int | float) and 0 < self.timeout_s <= 60):
            raise ValueError("weather timeout_s must be between 0 and 60 seconds")


class Weather:
    """Forecasts from one Open-Meteo service, with dates read by the device's clock."""

    def __init__(self, service: OpenMeteo | None = None, clock: Clock | None = None) -> None:
        self.service = service or OpenMeteo()
        self.clock = clock or Clock()

    def weather(self, location: str, date: str | None = None) -> dict[str, Any]:
        """Weather forecast for a place from Open-Meteo. location: a city or place name.
        date: optional, like '2025-08-15', 'tomorrow' or '8/15'; today when left out (up to 15
        days ahead)."""
        place = " ".join(location.split())
        if not place or len(place) > MAX_LOCATION_CHARS:
            raise WeatherError(
                f"location must be a place name of 1 to {MAX_LOCATION_CHARS} characters"
            )
        if not place.isprintable():
            raise WeatherError("location must be printable text")
        day = self._date("today" if date is None else date)
        found = self._geocode(place)
        forecast = self._forecast(found, day, current=date is None)
        return {
            "location": _place_name(found),
            "latitude": found["latitude"],
            "longitude": found["longitude"],
            "timezone": forecast.get("timezone"),
            "date": day.isoformat(),
            "weekday": WEEKDAYS[day.weekday()].capitalize(),
            **_summarize(forecast, day, current=date is None),
        }

    # -- the two requests ---------------------------------------------------------------------

    def _date(self, text: str) -> dt.date:
        try:
            resolved = self.clock.resolve_date(text)
        except ValueError as exc:
            raise WeatherError(str(exc)) from None
        ahead = resolved["days_from_today"]
        if not 0 <= ahead < FORECAST_DAYS:
            raise WeatherError(
                f"{resolved['date']} is {ahead} days from today; forecasts cover today up to "
                f"{FORECAST_DAYS - 1} days ahead"
            )
        return dt.date.fromisoformat(resolved["date"])

    def _geocode(self, place: str) -> dict[str, Any]:
        reply = self._get(
            self.service.geocoding_url,
            {"name": place, "count": 1, "language": self.service.language, "format": "json"},
        )
        results = reply.get("results")
        if not results:
            raise WeatherError(f"no place called {place!r} is known to the weather service")
        if not isinstance(results, list) or not isinstance(results[0], dict):
            raise WeatherError("the weather service's place search replied in an unexpected shape")
        found: dict[str, Any] = results[0]
        for key in ("latitude", "longitude"):
            value = found.get(key)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise WeatherError(f"the weather service gave no {key} for {place!r}")
        return found

    def _forecast(self, place: dict[str, Any], day: dt.date, *, current: bool) -> dict[str, Any]:
        params: dict[str, Any] = {
            "latitude": place["latitude"],
            "longitude": place["longitude"],
            "daily": ",".join(DAILY),
            "timezone": "auto",
            "start_date": day.isoformat(),
            "end_date": day.isoformat(),
        }
        if current:
            params["current"] = ",".join(CURRENT)
        return self._get(self.service.forecast_url, params)

    def _slow(self, host: str) -> str:
        return f"the weather service {host} did not answer within {self.service.timeout_s:g} s"

    def _get(self, url: str, params: dict[str, Any]) -> dict[str, Any]:
        # Imported at the first call: urllib.request brings http.client, email and ssl, memory
        # that a daemon never asked about the weather would keep resident for nothing.
        import urllib.request  # noqa: PLC0415

        full = f"{url}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(full, headers={"User-Agent": "edge-agent"})
        host = urllib.parse.urlsplit(url).netloc
        try:
            with urllib.request.urlopen(request, timeout=self.service.timeout_s) as response:
                body = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise WeatherError(f"the weather service {host} refused: {_reason(exc)}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise WeatherError(self._slow(host)) from None
            raise WeatherError(
                f"the weather service {host} is unreachable (is the device offline?): {exc.reason}"
            ) from None
        except TimeoutError:
            raise WeatherError(self._slow(host)) from None
        except OSError as exc:
            raise WeatherError(f"the weather service {host} failed: {exc}") from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise WeatherError(f"the weather service {host} sent an oversized reply")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise WeatherError(
                f"the weather service {host} sent a reply that is not JSON"
            ) from None
        if not isinstance(data, dict):
            raise WeatherError(f"the weather service {host} replied in an unexpected shape")
        if data.get("error"):
            raise WeatherError(
                f"the weather service {host} refused: {str(data.get('reason'))[:200]}"
            )
        return data


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read(65536))
        if isinstance(body, dict) and body.get("reason"):
            return f"HTTP {exc.code}: {str(body['reason'])[:200]}"
    except (ValueError, OSError, UnicodeDecodeError):
        pass  # the status line alone still says what happened
    return f"HTTP {exc.code} {exc.reason}"


def _text(value: Any, limit: int = 60) -> str | None:
    return value[:limit] if isinstance(value, str) and value.strip() else None


def _place_name(found: dict[str, Any]) -> str:
    parts = [_text(found.get(k)) for k in ("name", "admin1", "country")]
    return ", ".join(dict.fromkeys(p for p in parts if p)) or "unknown place"


def _measure(name: str, value: Any, units: Any) -> dict[str, Any] | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    unit = units.get(name) if isinstance(units, dict) else None
    return {"quantity": name, "value": value, "unit": _text(unit, 16) or ""}


def _conditions(code: Any) -> str | None:
    if isinstance(code, bool) or not isinstance(code, int | float):
        return None
    return WMO_CODES.get(int(code), f"weather code {int(code)}")


def _summarize(forecast: dict[str, Any], day: dt.date, *, current: bool) -> dict[str, Any]:
    """The day's forecast (and the current weather when asked) as quantities with units."""
    daily, units = forecast.get("daily"), forecast.get("daily_units")
    if not isinstance(daily, dict) or not isinstance(daily.get("time"), list):
        raise WeatherError("the weather service's forecast came in an unexpected shape")
    try:
        index = daily["time"].index(day.isoformat())
    except ValueError:
        raise WeatherError(f"the weather service has no forecast for {day.isoformat()}") from None

    def at(name: str) -> Any:
        values = daily.get(name)
        return values[index] if isinstance(values, list) and index < len(values) else None

    out: dict[str, Any] = {
        "conditions": _conditions(at("weather_code")),
        "forecast": [m for n in DAILY[1:] if (m := _measure(n, at(n), units)) is not None],
    }
    now, now_units = forecast.get("current"), forecast.get("current_units")
    if current and isinstance(now, dict):
        out["now"] = {
            "time": _text(now.get("time"), 32),
            "conditions": _conditions(now.get("weather_code")),
            "measures": [
                m
                for n in CURRENT
                if n != "weather_code" and (m := _measure(n, now.get(n), now_units))
            ],
        }
    return out


__all__ = ["FORECAST_URL", "GEOCODING_URL", "OpenMeteo", "Weather", "WeatherError"]
