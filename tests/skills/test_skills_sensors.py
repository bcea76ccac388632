"""The sensor readers over fake sysfs trees: thermal zones, IIO devices and 1-Wire probes."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge_agentd.skills.demo import SysfsTree, scratchpad, w1_slave_text
from edge_agentd.skills.onewire import crc8, parse_w1_slave
from edge_agentd.skills.readings import UNITS, SensorError
from edge_agentd.skills.sensors import MAX_COMPARE_CALLS, Sensors
from edge_agentd.skills.sysfs import Root


def sensors_of(sysfs: SysfsTree) -> Sensors:
    return Sensors(Root(sysfs.root))


# -- thermal zones ---------------------------------------------------------------------------


def test_cpu_temperature_is_the_cpu_zone_in_celsius(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(0, "acpitz", "27800")
    sysfs.thermal_zone(1, "x86_pkg_temp", "48312")
    result = sensors_of(sysfs).cpu_temperature()
    assert result == {
        "sensor": "thermal_zone1",
        "label": "x86_pkg_temp",
        "quantity": "temperature",
        "value": 48.312,
        "unit": "°C",
        "also": {"value": 118.96, "unit": "°F", "unit_name": "Fahrenheit"},
    }


def test_cpu_temperature_falls_back_to_the_first_zone(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(10, "gpu", "1000")
    sysfs.thermal_zone(2, "battery", "-5500")
    result = sensors_of(sysfs).cpu_temperature()
    assert (result["sensor"], result["value"]) == ("thermal_zone2", -5.5)


def test_no_thermal_zone_is_said_clearly(sysfs: SysfsTree) -> None:
    with pytest.raises(SensorError, match=r"no thermal zone was found under .*/sys/class/thermal"):
        sensors_of(sysfs).cpu_temperature()


@pytest.mark.parametrize(
    ("temp", "message"),
    [
        ("hot", "not a number"),
        ("", "not a number"),
        ("nan", "not a finite number"),
        ("-300000", "impossible temperature"),
    ],
)
def test_garbage_zone_values_are_rejected(sysfs: SysfsTree, temp: str, message: str) -> None:
    sysfs.thermal_zone(0, "cpu-thermal", temp)
    with pytest.raises(SensorError, match=message):
        sensors_of(sysfs).cpu_temperature()


def test_missing_temp_file(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(0, "cpu-thermal", None)
    with pytest.raises(SensorError, match=r"thermal_zone0 could not be read.*temp does not exist"):
        sensors_of(sysfs).cpu_temperature()


def test_unreadable_temp_files(sysfs: SysfsTree, tmp_path: Path) -> None:
    # Root reads through chmod 000, so "unreadable" is made of things that are not files.
    os.mkfifo(sysfs.thermal_zone(0, "cpu-thermal", None) / "temp")  # would block a plain open
    (sysfs.thermal_zone(1, "soc", None) / "temp").mkdir()
    (sysfs.thermal_zone(2, "x", None) / "temp").symlink_to(tmp_path / "nowhere")
    secret = tmp_path / "secret"
    secret.write_text("42000\n")
    (sysfs.thermal_zone(3, "x", None) / "temp").symlink_to(secret)
    sensors = {s.name: s for s in sensors_of(sysfs).discover()}
    expected = {
        "thermal_zone0": "is not a regular file",
        "thermal_zone1": "is not a regular file",
        "thermal_zone2": "leads outside",
        "thermal_zone3": "leads outside",
    }
    for name, message in expected.items():
        with pytest.raises(SensorError, match=message):
            sensors[name].read()


def test_unreadable_zone_type_still_lists_the_zone(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(0, None, "40000")
    (listed,) = sensors_of(sysfs).list_sensors()["sensors"]
    assert listed["label"] == "unknown"
    assert sensors_of(sysfs).read_sensor("thermal_zone0")["readings"][0]["value"] == 40.0


def test_a_zone_linked_outside_the_root_is_never_read(sysfs: SysfsTree, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "thermal_zone7"
    outside.mkdir(parents=True)
    (outside / "temp").write_text("99000\n")
    (sysfs.root / "class" / "thermal").mkdir(parents=True)
    (sysfs.root / "class" / "thermal" / "thermal_zone7").symlink_to(outside)
    with pytest.raises(SensorError, match="leads outside"):
        sensors_of(sysfs).cpu_temperature()


# -- IIO -------------------------------------------------------------------------------------


def test_bme280_scaled_inputs_in_our_units(sysfs: SysfsTree) -> None:
    sysfs.iio_device(
        0,
        "bme280",
        {
            "in_temp_input": "21370",  # milli-°C
            "in_pressure_input": "100.543210",  # kPa
            "in_humidityrelative_input": "45123",  # milli-percent
            "in_temp_oversampling_ratio": "2",
        },
    )
    result = sensors_of(sysfs).read_sensor("bme280")
    readings = {r["quantity"]: (r["value"], r["unit"]) for r in result["readings"]}
    assert readings == {
        "temperature": (21.37, "°C"),
        "pressure": (1005.432, "hPa"),
        "humidity": (45.123, "%RH"),
    }


def test_raw_values_use_offset_then_scale(sysfs: SysfsTree) -> None:
    sysfs.iio_device(
        0,
        "tmp117",
        {"in_temp_raw": "1000", "in_temp_offset": "-500", "in_temp_scale": "10"},
    )
    (reading,) = sensors_of(sysfs).read_sensor("tmp117")["readings"]
    assert (reading["value"], reading["unit"]) == (5.0, "°C")  # (1000 - 500) * 10 milli-°C


def test_indexed_channel_uses_the_scale_its_type_shares(sysfs: SysfsTree) -> None:
    sysfs.iio_device(
        3,
        "tsl2591",
        {"in_illuminance0_raw": "200", "in_illuminance_scale": "0.5", "in_intensity_ir_raw": "7"},
    )
    result = sensors_of(sysfs).read_sensor("tsl2591")
    assert result["readings"] == [
        {"quantity": "illuminance", "value": 100.0, "unit": "lx", "channel": "in_illuminance0"}
    ]


def test_input_wins_over_raw(sysfs: SysfsTree) -> None:
    sysfs.iio_device(0, "sht4x", {"in_temp_raw": "999999", "in_temp_input": "22500"})
    (reading,) = sensors_of(sysfs).read_sensor("sht4x")["readings"]
    assert reading["value"] == 22.5


def test_iio_devices_without_known_channels_are_not_sensors(sysfs: SysfsTree) -> None:
    sysfs.iio_device(0, "mpu6050", {"in_accel_x_raw": "12", "in_anglvel_y_raw": "3"})
    (sysfs.root / "bus" / "iio" / "devices" / "trigger0").mkdir()
    assert sensors_of(sysfs).list_sensors()["sensors"] == []


def test_duplicate_and_hostile_device_names(sysfs: SysfsTree) -> None:
    sysfs.iio_device(0, "bme280", {"in_temp_input": "20000"})
    sysfs.iio_device(1, "bme280", {"in_temp_input": "30000"})
    sysfs.iio_device(2, "../../etc/passwd\n\x1b[31m", {"in_temp_input": "40000"})
    sysfs.iio_device(3, None, {"in_temp_input": "50000"})
    sysfs.thermal_zone(0, "cpu-thermal", "1000")
    sysfs.iio_device(4, "thermal_zone0", {"in_temp_input": "60000"})
    sensors = sensors_of(sysfs)
    names = [s["name"] for s in sensors.list_sensors()["sensors"]]
    assert names == [
        "thermal_zone0",
        "bme280",
        "bme280_2",
        "etc_passwd_31m",
        "iio_device3",
        "thermal_zone0_2",
    ]
    values = [sensors.read_sensor(n)["readings"][0]["value"] for n in names]
    assert values == [1.0, 20.0, 30.0, 40.0, 50.0, 60.0]


def test_garbage_scale_is_an_error_naming_the_file(sysfs: SysfsTree) -> None:
    sysfs.iio_device(0, "bmp180", {"in_pressure_raw": "1000", "in_pressure_scale": "0.1x"})
    with pytest.raises(SensorError, match=r"in_pressure_scale holds '0.1x'"):
        sensors_of(sysfs).read_sensor("bmp180")


def test_negative_humidity_is_rejected(sysfs: SysfsTree) -> None:
    sysfs.iio_device(0, "htu21", {"in_humidityrelative_input": "-2000"})
    with pytest.raises(SensorError, match="impossible humidity"):
        sensors_of(sysfs).read_sensor("htu21")


# -- 1-Wire ----------------------------------------------------------------------------------

# A reading as the kernel printed it on a real probe: 0x0172 = 23.125 °C, CRC 0x57.
REAL_W1_SLAVE = "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=23125\n"


def test_crc8_matches_a_real_probe() -> None:
    assert crc8(bytes.fromhex("72014b467fff0e10")) == 0x57
    assert parse_w1_slave(REAL_W1_SLAVE, "28-0316a2796eff", "w1_slave") == 23.125


def test_ds18b20_reading(sysfs: SysfsTree) -> None:
    sysfs.w1_probe("28-0316a2796eff", REAL_W1_SLAVE)
    sysfs.w1_probe("28-00000a1b2c3d", w1_slave_text(-10125))
    sysfs.w1_probe("01-000012345678", "not a thermometer")  # a DS2401 serial number chip
    sensors = sensors_of(sysfs)
    listed = sensors.list_sensors()["sensors"]
    assert [(s["name"], s["label"]) for s in listed] == [
        ("28-00000a1b2c3d", "DS18B20"),
        ("28-0316a2796eff", "DS18B20"),
    ]
    assert listed[0]["measures"] == [{"quantity": "temperature", "unit": "°C"}]
    assert sensors.read_sensor("28-0316a2796eff")["readings"][0]["value"] == 23.125
    assert sensors.read_sensor("28-00000a1b2c3d")["readings"][0]["value"] == -10.125
    # A probe's name is its 1-Wire id, and its reading says so ("which ID does it have?"); a
    # sensor whose bus gives it no id has none.
    assert sensors.read_sensor("28-0316a2796eff")["id"] == "28-0316a2796eff"
    assert "id" not in listed[0]


def test_a_sensor_with_no_bus_id_reads_without_one(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(0, "cpu-thermal", "40000")
    assert "id" not in sensors_of(sysfs).read_sensor("thermal_zone0")


def test_crc_no_is_rejected(sysfs: SysfsTree) -> None:
    sysfs.w1_probe("28-0316a2796eff", REAL_W1_SLAVE.replace("YES", "NO"))
    with pytest.raises(SensorError, match="CRC check failed"):
        sensors_of(sysfs).read_sensor("28-0316a2796eff")


def test_a_scratchpad_whose_crc_is_wrong_is_rejected_even_if_the_kernel_says_yes(
    sysfs: SysfsTree,
) -> None:
    sysfs.w1_probe("28-0316a2796eff", REAL_W1_SLAVE.replace("72 01", "73 01"))
    with pytest.raises(SensorError, match="scratchpad CRC does not match"):
        sensors_of(sysfs).read_sensor("28-0316a2796eff")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (w1_slave_text(0, pad=bytes(9)), "did not answer"),
        (w1_slave_text(85000), "power-on value 85 °C"),
        ("72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n", "incomplete"),
        ("", "incomplete"),
        ("garbage\nmore garbage\n", "unreadable first line"),
        (REAL_W1_SLAVE.replace("t=23125", "t=lots"), "unreadable second line"),
        (REAL_W1_SLAVE.replace("0e 10 57 t", "0e 10 58 t"), "disagree"),
    ],
)
def test_bad_w1_slave_files(sysfs: SysfsTree, text: str, message: str) -> None:
    sysfs.w1_probe("28-0316a2796eff", text)
    with pytest.raises(SensorError, match=message):
        sensors_of(sysfs).read_sensor("28-0316a2796eff")


def test_temperature_file_when_w1_slave_is_absent(sysfs: SysfsTree) -> None:
    sysfs.w1_probe("28-0316a2796eff", None, temperature="19875")
    (reading,) = sensors_of(sysfs).read_sensor("28-0316a2796eff")["readings"]
    assert (reading["value"], reading["unit"]) == (19.875, "°C")


def test_probe_with_neither_file(sysfs: SysfsTree) -> None:
    sysfs.w1_probe("28-0316a2796eff")
    with pytest.raises(SensorError, match="temperature does not exist"):
        sensors_of(sysfs).read_sensor("28-0316a2796eff")


def test_scratchpad_helper_round_trips() -> None:
    pad = scratchpad(21500)
    assert crc8(pad[:8]) == pad[8]
    assert parse_w1_slave(w1_slave_text(21500), "28-x", "w") == 21.5


# -- listing and lookup ----------------------------------------------------------------------


def build_mixed(sysfs: SysfsTree) -> None:
    sysfs.thermal_zone(0, "cpu-thermal", "51540")
    sysfs.iio_device(
        0,
        "bme280",
        {
            "in_temp_input": "21370",
            "in_pressure_input": "100.5",
            "in_humidityrelative_input": "45123",
        },
    )
    sysfs.w1_probe("28-0316a2796eff", REAL_W1_SLAVE)


def test_list_sensors_gives_names_kinds_and_units(sysfs: SysfsTree) -> None:
    build_mixed(sysfs)
    listed = sensors_of(sysfs).list_sensors()
    assert "note" not in listed
    assert listed["sensors"] == [
        {
            "name": "thermal_zone0",
            "kind": "thermal_zone",
            "label": "cpu-thermal",
            "measures": [{"quantity": "temperature", "unit": "°C"}],
        },
        {
            "name": "bme280",
            "kind": "iio",
            "label": "bme280 (iio:device0)",
            "measures": [
                {"quantity": "humidity", "unit": "%RH"},
                {"quantity": "pressure", "unit": "hPa"},
                {"quantity": "temperature", "unit": "°C"},
            ],
        },
        {
            "name": "28-0316a2796eff",
            "kind": "w1",
            "label": "DS18B20",
            "measures": [{"quantity": "temperature", "unit": "°C"}],
        },
    ]


def test_list_sensors_counts_them_all_or_those_of_one_quantity(sysfs: SysfsTree) -> None:
    build_mixed(sysfs)
    sensors = sensors_of(sysfs)
    assert sensors.list_sensors()["count"] == 3
    humid = sensors.list_sensors("humidity")
    assert (humid["count"], humid["quantity"]) == (1, "humidity")
    assert [s["name"] for s in humid["sensors"]] == ["bme280"]
    warm = sensors.list_sensors("temperature")
    assert warm["count"] == 3 and len(warm["sensors"]) == 3
    # Written as people write it, the quantity is still the one meant.
    assert sensors.list_sensors(" Humidity")["count"] == 1
    assert sensors.list_sensors("temperatures")["quantity"] == "temperature"
    # A known quantity no sensor here measures is a count of 0; a word that is no quantity is
    # an error naming the quantities, not a count of 0 that would read as "none here".
    assert sensors.list_sensors("illuminance")["count"] == 0
    with pytest.raises(SensorError, match="no quantity named 'xxx"):
        sensors.list_sensors("x" * 500)
    assert [arguments for arguments, _ in sensors.list_calls()] == [
        {},
        {"quantity": "temperature"},
        {"quantity": "humidity"},
        {"quantity": "pressure"},
    ]


def test_an_empty_tree_lists_nothing_and_says_where_it_looked(sysfs: SysfsTree) -> None:
    listed = sensors_of(sysfs).list_sensors()
    assert (listed["sensors"], listed["count"]) == ([], 0)
    assert f"{sysfs.root}/class/thermal" in listed["note"]
    assert f"{sysfs.root}/bus/w1/devices" in listed["note"]
    with pytest.raises(SensorError, match="no sensors were found"):
        sensors_of(sysfs).read_sensor("thermal_zone0")


def test_unknown_name_lists_the_known_ones(sysfs: SysfsTree) -> None:
    build_mixed(sysfs)
    with pytest.raises(SensorError) as caught:
        sensors_of(sysfs).read_sensor("../../../etc/shadow")
    assert str(caught.value) == (
        "no sensor named '../../../etc/shadow'; the sensors are: thermal_zone0, bme280, "
        "28-0316a2796eff"
    )


@pytest.mark.parametrize("family", ["thermal_zone0", "bme280", "28-0316a2796eff"])
def test_a_device_that_disappears_between_listing_and_reading(
    sysfs: SysfsTree, family: str
) -> None:
    build_mixed(sysfs)
    (sensor,) = [s for s in sensors_of(sysfs).discover() if s.name == family]
    for link in (
        sysfs.root / "class/thermal/thermal_zone0",
        sysfs.root / "bus/iio/devices/iio:device0",
        sysfs.root / "bus/w1/devices/28-0316a2796eff",
    ):
        shutil.rmtree(link.resolve())
        link.unlink()
    with pytest.raises(SensorError, match="disappeared"):
        sensor.read()
    with pytest.raises(SensorError, match="no sensors were found"):
        sensors_of(sysfs).read_sensor(family)


# -- hostile input ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_tree(tmp_path_factory: pytest.TempPathFactory) -> Sensors:
    base = tmp_path_factory.mktemp("mixed")
    (base / "secret").write_text("do not read")
    sysfs = SysfsTree(base / "sys")
    build_mixed(sysfs)
    return sensors_of(sysfs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(max_size=300) | st.sampled_from(["bme280", "../secret", "bme280/../.."]))
def test_any_sensor_name_is_looked_up_never_opened(mixed_tree: Sensors, name: str) -> None:
    known = {"thermal_zone0", "bme280", "28-0316a2796eff"}
    if name in known:
        assert mixed_tree.read_sensor(name)["sensor"] == name
    else:
        with pytest.raises(SensorError, match="the sensors are: thermal_zone0, bme280, "):
            mixed_tree.read_sensor(name)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quantity=st.text(max_size=300) | st.sampled_from([" Humidity ", "PRESSURES", "lux"]))
def test_any_quantity_lists_its_sensors_or_names_the_quantities(
    mixed_tree: Sensors, quantity: str
) -> None:
    try:
        listed = mixed_tree.list_sensors(quantity)
    except SensorError as exc:
        assert str(exc).endswith("the quantities are: temperature, humidity, pressure, illuminance")
        return
    # Read as a known quantity: the count is the list's, and each sensor listed measures it.
    assert listed["quantity"] in ("temperature", "humidity", "pressure", "illuminance")
    assert listed["count"] == len(listed["sensors"])
    for sensor in listed["sensors"]:
        assert listed["quantity"] in [m["quantity"] for m in sensor["measures"]]


contents = st.one_of(
    st.binary(max_size=200),
    st.binary(min_size=4090, max_size=4200),
    st.sampled_from([b"1e400", b"-inf", b"nan", b"1_000", b"\xff\xfe", b"0x10", b"\x00", b" 7 "]),
    st.text(max_size=60).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.integers().map(lambda n: str(n).encode()),
)
victims = st.sampled_from(
    [
        ("devices/virtual/thermal/thermal_zone0", "temp"),
        ("devices/virtual/thermal/thermal_zone0", "type"),
        ("devices/platform/i2c/iio:device0", "name"),
        ("devices/platform/i2c/iio:device0", "in_temp_input"),
        ("devices/platform/i2c/iio:device0", "in_pressure_input"),
        ("devices/platform/i2c/iio:device1", "in_illuminance_raw"),
        ("devices/platform/i2c/iio:device1", "in_illuminance_scale"),
        ("devices/platform/i2c/iio:device1", "in_illuminance_offset"),
        ("devices/w1_bus_master1/28-0316a2796eff", "w1_slave"),
    ]
)


@pytest.fixture(scope="module")
def victim_tree(tmp_path_factory: pytest.TempPathFactory) -> SysfsTree:
    sysfs = SysfsTree(tmp_path_factory.mktemp("victims") / "sys")
    build_mixed(sysfs)
    sysfs.iio_device(1, "veml7700", {"in_illuminance_raw": "300", "in_illuminance_scale": "2"})
    return sysfs


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(victim=victims, content=contents)
def test_any_file_content_gives_a_reading_or_a_sensor_error(
    victim_tree: SysfsTree, victim: tuple[str, str], content: bytes
) -> None:
    directory, file = victim
    path = victim_tree.root / directory / file
    original = path.read_bytes() if path.exists() else None
    path.write_bytes(content)
    try:
        sensors = sensors_of(victim_tree)
        listed = sensors.list_sensors()["sensors"]
        assert len(listed) == 4
        for described in listed:
            try:
                result = sensors.read_sensor(described["name"])
            except SensorError as exc:
                assert str(exc)
                continue
            for reading in result["readings"]:
                assert math.isfinite(reading["value"])
                assert reading["unit"] == UNITS[reading["quantity"]]
        try:
            sensors.cpu_temperature()
        except SensorError as exc:
            assert "thermal_zone0" in str(exc)
    finally:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)


# -- comparing two sensors ---------------------------------------------------------------------


def test_compare_sensors_says_which_reads_higher_and_by_how_much(sysfs: SysfsTree) -> None:
    build_mixed(sysfs)
    sensors = sensors_of(sysfs)
    result = sensors.compare_sensors("bme280", "thermal_zone0")
    assert result == {
        "quantity": "temperature",
        "readings": [
            {"sensor": "bme280", "label": "bme280 (iio:device0)", "value": 21.37, "unit": "°C"},
            {"sensor": "thermal_zone0", "label": "cpu-thermal", "value": 51.54, "unit": "°C"},
        ],
        "difference": {"value": 30.17, "unit": "°C"},
        "higher": "thermal_zone0",
        "lower": "bme280",
    }
    # The difference is the same whichever comes first.
    assert sensors.compare_sensors("thermal_zone0", "bme280")["difference"]["value"] == 30.17


def test_compare_calls_are_each_pair_that_measures_one_quantity(sysfs: SysfsTree) -> None:
    build_mixed(sysfs)
    calls = sensors_of(sysfs).compare_calls()
    assert [arguments for arguments, _ in calls] == [
        {"first": "thermal_zone0", "second": "bme280", "quantity": "temperature"},
        {"first": "thermal_zone0", "second": "28-0316a2796eff", "quantity": "temperature"},
        {"first": "bme280", "second": "28-0316a2796eff", "quantity": "temperature"},
    ]
    assert calls[0][1] == (
        "which of the thermal zone cpu-thermal and the sensor chip bme280 (iio:device0) reads "
        "the higher temperature, and by how many °C"
    )


def test_compare_calls_are_capped_in_a_house_of_probes(sysfs: SysfsTree) -> None:
    for i in range(12):
        sysfs.w1_probe(f"28-00000000{i:04x}", w1_slave_text(1000 * i))
    assert len(sensors_of(sysfs).compare_calls()) == MAX_COMPARE_CALLS


def test_two_equal_readings_have_no_higher(sysfs: SysfsTree) -> None:
    sysfs.w1_probe("28-000000000001", w1_slave_text(20000))
    sysfs.w1_probe("28-000000000002", w1_slave_text(20000))
    result = sensors_of(sysfs).compare_sensors("28-000000000001", "28-000000000002")
    assert result["difference"] == {"value": 0.0, "unit": "°C"}
    assert "higher" not in result and "lower" not in result


@pytest.mark.parametrize(
    ("first", "second", "quantity", "message"),
    [
        ("bme280", "bme280", "temperature", "two different sensors"),
        ("bme280", "garage door", "temperature", "no sensor named 'garage door'; the sensors"),
        ("thermal_zone0", "bme280", "humidity", "thermal_zone0 does not measure 'humidity'"),
        ("bme280", "thermal_zone0", "light", "bme280 does not measure 'light'"),
    ],
)
def test_compare_sensors_refuses_what_it_cannot_compare(
    sysfs: SysfsTree, first: str, second: str, quantity: str, message: str
) -> None:
    build_mixed(sysfs)
    with pytest.raises(SensorError, match=message):
        sensors_of(sysfs).compare_sensors(first, second, quantity)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=st.text(max_size=80), second=st.text(max_size=80), quantity=st.text(max_size=30))
def test_any_names_give_a_comparison_or_a_sensor_error(
    sysfs: SysfsTree, first: str, second: str, quantity: str
) -> None:
    if not (sysfs.root / "class").exists():
        build_mixed(sysfs)
    try:
        result = sensors_of(sysfs).compare_sensors(first, second, quantity)
    except SensorError as exc:
        assert len(str(exc)) < 400  # a short message, however long the names
    else:
        assert result["difference"]["value"] >= 0
