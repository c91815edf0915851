# SHD301 fixture, family `processes`. "# blocking": flagged; "# ok": not flagged.
import asyncio
import os
import subprocess
from subprocess import check_output


async def run_and_wait(cmd):
    subprocess.run(cmd)  # blocking
    subprocess.call(cmd)  # blocking
    subprocess.check_call(cmd)  # blocking
    check_output(cmd)  # blocking
    subprocess.getoutput("ls")  # blocking
    subprocess.getstatusoutput("ls")  # blocking
    os.system("ls")  # blocking
    os.popen("ls")  # blocking
    os.spawnl(os.P_WAIT, "/bin/true", "true")  # blocking
    os.posix_spawn("/bin/true", ["true"], {})  # blocking
    os.wait()  # blocking
    os.waitpid(-1, 0)  # blocking
    os.wait4(-1, 0)  # blocking


async def popen_objects(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)  # blocking
    p.wait()  # blocking
    p.communicate()  # blocking
    p.stdout.read()  # blocking
    with subprocess.Popen(cmd) as q:  # blocking
        q.wait(timeout=5)  # blocking


def _build(cmd):
    return subprocess.check_call(cmd)


def build_all(cmds):
    for cmd in cmds:
        _build(cmd)


async def two_levels_down(cmds):
    build_all(cmds)  # blocking (callee)


# ---------------------------------------------------------------- near misses
async def near_misses(cmd, p: subprocess.Popen):
    proc = await asyncio.create_subprocess_exec(*cmd)  # ok
    await proc.wait()  # ok
    await proc.communicate()  # ok
    await asyncio.to_thread(subprocess.run, cmd)  # ok
    p.poll()  # ok
    p.wait(timeout=0)  # ok
    os.waitpid(-1, os.WNOHANG)  # ok
    os.getpid()  # ok


def sync_helper(cmd):
    subprocess.run(cmd)  # ok


async def helper_in_thread(cmd):
    await asyncio.get_running_loop().run_in_executor(None, sync_helper, cmd)  # ok
