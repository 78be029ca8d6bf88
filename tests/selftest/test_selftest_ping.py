"""selftest/ping.py: fakefs's ping program."""

import re
import subprocess
import sys

from fakefs.selftest import ping as ping_prog


def test_the_program_prints_as_iputils(tmp_path):
    control = tmp_path / "control"
    control.write_text("")
    script = ping_prog.install(str(tmp_path / "bin"), str(control))
    r = subprocess.run([script, "127.0.0.1", "-c", "2", "-i", "0.01"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data."
    assert re.match(r"64 bytes from 127\.0\.0\.1: icmp_seq=2 ttl=64 time=\d+\.\d{3} ms$", lines[2])
    assert lines[4] == "--- 127.0.0.1 ping statistics ---"
    assert lines[5].startswith("2 packets transmitted, 2 received, 0% packet loss, time ")
    assert control.read_text() == "echo\n"
    r = subprocess.run([script, "10.1.2.3", "-c", "1"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "Network is unreachable" in r.stderr
    assert sys.executable in open(script).readline()


def test_without_the_kernels_control_file_it_fails_and_makes_none(tmp_path):
    control = tmp_path / "absent"
    script = ping_prog.install(str(tmp_path / "bin"), str(control))
    r = subprocess.run([script, "127.0.0.1", "-c", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "No such file or directory" in r.stderr
    assert not control.exists()
