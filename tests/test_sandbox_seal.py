"""fakefs/cli/sandbox_seal.py: each step of the seal run in a forked child
(whatever it does to its process stays there); the sandbox's COMMAND
sealed is tests/test_sandbox.py's."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import subprocess

import pytest

from fakefs.cli import sandbox_seal as seal

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping capabilities and "
                                "mapping every id in a user namespace need root")
needs_filter = pytest.mark.skipif(seal.perf_filter() is None, reason="no seccomp filter "
                                  "for %s" % platform.machine())
PR_SET_NO_NEW_PRIVS = 38


def in_child(fn) -> tuple[int, str]:
    """Run ``fn()`` (returns a str) in a forked child: (exit status, its result)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(r)
            os.write(w, fn().encode())
        except BaseException as e:            # noqa: BLE001 - reported to the parent
            os.write(w, ("%s: %s" % (type(e).__name__, e)).encode())
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out


def perf_event_open_errno() -> str:
    """perf_event_open with no attr: EFAULT from a kernel that has it."""
    libc = ctypes.CDLL(None, use_errno=True)
    nr = seal.PERF_EVENT_OPEN_NR[platform.machine()][0][1][0]
    rc = libc.syscall(nr, None, 0, -1, -1, 0)
    return errno.errorcode[ctypes.get_errno()] if rc < 0 else "fd"


def status_caps(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(next(ln for ln in f if ln.startswith(field + ":")).split()[1], 16)


def test_identity_map_maps_each_range_to_itself():
    assert seal.identity_map("         0          0 4294967295\n") == "0 0 4294967295\n"
    assert seal.identity_map("0 1000 1\n1 100000 65536\n") == "0 0 1\n1 1 65536\n"


def test_the_filter_program_is_whole_instructions_ending_in_a_return():
    for machine in seal.PERF_EVENT_OPEN_NR:
        prog = seal.perf_filter(machine)
        assert len(prog) % 8 == 0
        assert prog[-8:-6] == (0x06).to_bytes(2, "little")      # BPF_RET | BPF_K
    assert seal.perf_filter("sparc64") is None


# classic BPF as seccomp runs it (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
NR_AT, ARCH_AT = 0, 4


def decode(prog: bytes) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) of each ``struct sock_filter``."""
    return [struct.unpack_from("=HBBI", prog, i) for i in range(0, len(prog), 8)]


def run_filter(insns, arch: int, nr: int) -> int:
    """The program's verdict for a system call ``nr`` of ABI ``arch``; every
    jump must land inside the program, forward."""
    a = pc = 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == LD_W_ABS:
            a = {ARCH_AT: arch, NR_AT: nr}[k]
            pc += 1
        elif code == JEQ_K:
            pc += 1 + (jt if a == k else jf)
            assert pc < len(insns)
        elif code == RET_K:
            return k
        else:
            raise AssertionError("instruction %#x at %d" % (code, pc))


def test_the_filter_jumps_land_where_they_mean_to():
    """Decoded, each compare of an ABI jumps to its system call load or on
    to the next ABI's compare (the last: to the final allow); each compare
    of a number jumps to the refusal or on to the next compare; run, it
    refuses perf_event_open on every ABI and nothing else."""
    for machine, abis in seal.PERF_EVENT_OPEN_NR.items():
        insns = decode(seal.perf_filter(machine))
        assert insns[0] == (LD_W_ABS, 0, 0, ARCH_AT) and insns[-1] == (RET_K, 0, 0, RET_ALLOW)
        arch_at = [i for i, ins in enumerate(insns) if ins[0] == JEQ_K and
                   ins[3] in {arch for arch, _n in abis}]
        assert [insns[i][3] for i in arch_at] == [arch for arch, _n in abis]
        for j, i in enumerate(arch_at):
            code, jt, jf, k = insns[i]
            numbers = abis[j][1]
            assert insns[i + 1 + jt] == (LD_W_ABS, 0, 0, NR_AT)
            after = arch_at[j + 1] if j + 1 < len(arch_at) else len(insns) - 1
            assert i + 1 + jf == after, (machine, hex(k))
            for n, nr in enumerate(numbers):
                at = i + 2 + n
                code, jt, jf, k = insns[at]
                assert (code, k, jf) == (JEQ_K, nr, 0)
                assert insns[at + 1 + jt] == (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)
            assert insns[i + 2 + len(numbers)] == (RET_K, 0, 0, RET_ALLOW)
        for arch, numbers in abis:
            for nr in numbers:
                assert run_filter(insns, arch, nr) == RET_ERRNO | errno.ENOSYS
            for nr in (0, 1, min(numbers) - 1, max(numbers) + 1):
                assert run_filter(insns, arch, nr) == RET_ALLOW
        assert run_filter(insns, 0x12345678, abis[0][1][0]) == RET_ALLOW


@needs_filter
def test_perf_event_open_fails_with_enosys_and_other_calls_go_through():
    def filtered():
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        before = perf_event_open_errno()
        seal.refuse_perf_event_open()
        return "%s %s %d" % (before, perf_event_open_errno(), os.getppid() > 0)
    rc, out = in_child(filtered)
    assert rc == 0, out
    # without the filter the kernel reads the attr (EFAULT; ENOSYS: no perf here)
    before, after, others = out.split()
    assert after == "ENOSYS" and others == "1", out
    assert before in ("EFAULT", "ENOSYS"), out
    # the filter is the child's: here perf_event_open is the kernel's
    assert perf_event_open_errno() == before


@needs_root
def test_dropped_capabilities_are_gone_from_every_set_and_mount_is_eperm(tmp_path):
    def dropped():
        seal.drop_capabilities((seal.CAP_SYS_ADMIN,))
        bit = 1 << seal.CAP_SYS_ADMIN
        sets = [bool(status_caps(f) & bit) for f in ("CapBnd", "CapPrm", "CapEff", "CapInh")]
        r = subprocess.run(["unshare", "-m", "true"], stderr=subprocess.DEVNULL)
        libc = ctypes.CDLL(None, use_errno=True)
        rc = libc.umount2(str(tmp_path).encode(), 0)
        return "%s %d %d %s" % (sets, r.returncode, rc, errno.errorcode[ctypes.get_errno()])
    rc, out = in_child(dropped)
    assert rc == 0, out
    assert out == "[False, False, False, False] 1 -1 EPERM", out
    assert status_caps("CapBnd") & (1 << seal.CAP_SYS_ADMIN)      # ours untouched


@needs_root
def test_the_user_namespace_maps_ids_to_themselves_and_locks_the_mounts(tmp_path):
    """A mount made before is locked in the new namespace: its umount is
    EINVAL even with CAP_SYS_ADMIN there, and the files keep their owners."""
    def entered():
        os.mkdir(tmp_path / "m")
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(seal.CLONE_NEWNS) == 0
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "before", str(tmp_path / "m")], check=True)
        outer = os.readlink("/proc/self/ns/user")
        seal.enter_userns()
        with open("/proc/self/uid_map") as f:
            uid_map = f.read().split()
        rc = libc.umount2(str(tmp_path / "m").encode(), 0)
        return "%s %s %d %s %d %d" % (outer != os.readlink("/proc/self/ns/user"),
                                      uid_map, rc, errno.errorcode[ctypes.get_errno()],
                                      os.getuid(), os.stat("/etc/passwd").st_uid)
    rc, out = in_child(entered)
    assert rc == 0, out
    with open("/proc/self/uid_map") as f:
        mapped = seal.identity_map(f.read()).split()
    assert out == "True %s -1 EINVAL 0 0" % mapped, out


def test_root_limits_are_raised_as_far_as_allowed():
    """Soft limits up to the hard ones at least, both to the most where
    CAP_SYS_RESOURCE allows: RT priorities, nice, mlock as root has them."""
    def raised():
        import resource
        out = []
        for res, most in seal.ROOT_LIMITS:
            hard = resource.getrlimit(res)[1]
            resource.setrlimit(res, (0, hard))
            seal.keep_root_limits()
            soft, new_hard = resource.getrlimit(res)
            out.append("ok" if soft == new_hard and new_hard in (hard, most) else
                       "%d: %s -> %s" % (res, (0, hard), (soft, new_hard)))
        return " ".join(out)
    rc, out = in_child(raised)
    assert rc == 0, out
    assert out == "ok ok ok", out


RET_USER_NOTIF = 0x7FC00000


def test_the_notifying_filter_hands_getppid_over_and_still_refuses_perf():
    """With a listener the same program refuses perf_event_open on every ABI
    and hands x86-64's getppid() to the listener; everything else goes on."""
    abis = seal.PERF_EVENT_OPEN_NR["x86_64"]
    insns = decode(seal.perf_filter("x86_64", notify=True))
    for arch, numbers in abis:
        for nr in numbers:
            assert run_filter(insns, arch, nr) == RET_ERRNO | errno.ENOSYS
        for nr in (0, 1, 39, 109, 111, min(numbers) - 1):
            assert run_filter(insns, arch, nr) == RET_ALLOW
    x86_64, i386 = abis[0][0], abis[1][0]
    assert run_filter(insns, x86_64, 110) == RET_USER_NOTIF            # getppid
    assert run_filter(insns, i386, 64) == RET_ALLOW                    # (i386's: not handed)
    assert run_filter(insns, 0x12345678, 110) == RET_ALLOW


@needs_filter
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the listener is x86-64's")
def test_a_notified_getppid_is_told_to_the_daemon_and_goes_on(tmp_path):
    """The sealed child sends its listener; the daemon's side gets each
    getppid() with the caller's pid and lets it go on (it returns the real
    parent's pid)."""
    import trio
    from fakefs.fuse import seccomp_notify

    seen = []

    class Calls:                               # the adapter's side, as the daemon has it
        def watching(self, request):
            return True

        async def notified(self, pid, nr, args, ret):
            seen.append((pid, nr, ret))

    class FS:
        syscalls = Calls()

    path = str(tmp_path / "syscalls.sock")
    notes = seccomp_notify.SyscallNotifications(FS(), path)

    def child():
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
        seal.notify_to_daemon(path)
        return "%d %d %s" % (os.getpid(), os.getppid(), perf_event_open_errno())

    async def main():
        result = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(notes.run)
            while not os.path.exists(path):
                await trio.sleep(0.01)
            result.append(await trio.to_thread.run_sync(in_child, child))
            nursery.cancel_scope.cancel()
        return result[0]

    rc, out = trio.run(main)
    assert rc == 0, out
    pid, ppid, perf = out.split()
    assert int(ppid) == os.getpid() and perf == "ENOSYS"
    assert seen == [(int(pid), 110, os.getpid())]
