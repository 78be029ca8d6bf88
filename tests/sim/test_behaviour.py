"""The machine's behaviour table is checked when it is read."""

from __future__ import annotations

import pytest

from fakefs.sim.behaviour import Behaviour, Device, load_behaviour


def test_behaviour_table_is_checked():
    spec = load_behaviour()
    assert "default" in spec["profile"]
    with pytest.raises(ValueError):
        Behaviour(dict(spec["profile"]["default"], waker="telepathy"))
    with pytest.raises(ValueError):
        Behaviour(dict(spec["profile"]["default"], pool="nowhere"))


def test_every_profile_and_device_loads():
    spec = load_behaviour()
    pools = {Behaviour(p).pool for p in spec["profile"].values()}
    assert {"percpu", "unbound", "highpri"} <= pools
    assert {Device(d).softirq for d in spec["device"]} == {3, 4}
