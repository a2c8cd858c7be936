"""Run a command as root in a throwaway KVM guest whose kernel has cgroup v2 only.

Why: the runner's cgroup v2 path cannot run on a host whose controllers are bound to v1
hierarchies (this project's CI and development machines are such hosts), and a fake
cgroup tree would test nothing. The guest is Debian's own kernel booted with
``cgroup_no_v1=all``; its root file system is the host's, shared read-only over 9p below a
RAM overlay, so the guest runs this checkout, its venv and the host's bubblewrap as they
are, and nothing it writes reaches the host except the result directory.

    python tests/vm/cgroup2_vm.py [--memory-mb N] [--cpus N] -- COMMAND...

runs COMMAND in the current directory (inside the guest) alone in a cgroup of its own,
``/sys/fs/cgroup/ci``, with pids, memory and cpu available, prints its output and exits with its status. Needs
``qemu-system-x86``, ``linux-image-amd64`` and ``busybox-static`` (``make test-cgroup2``
installs them) and ``/dev/kvm``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay")
"""What the guest needs to mount the host's root (their dependencies are added)."""

STAGE1 = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /lower /upper /newroot
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules); do insmod /mod/$m || echo "insmod $m failed"; done
ip link set lo up
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower
mount -t tmpfs -o size=75% upper /upper
mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot
mkdir -p /newroot/vm-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /newroot/vm-out
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh /vm-out/stage2.sh
"""

STAGE2 = """set -u
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs -o size=50% tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm /dev/pts && mount -t tmpfs tmpfs /dev/shm && mount -t devpts devpts /dev/pts
echo "+pids +memory +cpu" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/ci
export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
cd {cwd}
echo "vm: $(uname -r), cgroup controllers: $(cat /sys/fs/cgroup/ci/cgroup.controllers)"
# the command alone in its cgroup, as systemd-run --scope would start it
sh -c 'echo 0 > /sys/fs/cgroup/ci/cgroup.procs && exec "$@"' ci {command}
echo $? > /vm-out/rc
sync
echo o > /proc/sysrq-trigger
sleep 30
"""


def kernel() -> tuple[Path, str]:
    """Debian's generic kernel (it has 9p and overlay as modules; the cloud kernel has no 9p)."""
    found = sorted(Path("/boot").glob("vmlinuz-*-amd64"))
    found = [k for k in found if "cloud" not in k.name]
    if not found:
        sys.exit("cgroup2_vm: no /boot/vmlinuz-*-amd64: install linux-image-amd64 (make test-cgroup2 does)")
    return found[-1], found[-1].name.removeprefix("vmlinuz-")


def modules(version: str) -> list[Path]:
    """The modules in load order, dependencies first, each once."""
    out: list[Path] = []
    for name in MODULES:
        shown = subprocess.run(["modprobe", "-S", version, "--show-depends", name], capture_output=True,
                               text=True, check=True).stdout
        for line in shown.splitlines():
            if line.startswith("insmod ") and Path(line.split()[1]) not in out:
                out.append(Path(line.split()[1]))
    return out


def initramfs(dest: Path, version: str) -> Path:
    busybox = shutil.which("busybox")
    if busybox is None:
        sys.exit("cgroup2_vm: no busybox: install busybox-static (make test-cgroup2 does)")
    root = dest / "initramfs"
    (root / "bin").mkdir(parents=True)
    (root / "mod").mkdir()
    shutil.copy(busybox, root / "bin" / "busybox")
    names = []
    for mod in modules(version):
        data = mod.read_bytes()
        if mod.suffix == ".xz":
            import lzma

            data = lzma.decompress(data)
        (root / "mod" / mod.name.removesuffix(".xz")).write_bytes(data)
        names.append(mod.name.removesuffix(".xz"))
    (root / "modules").write_text(" ".join(names))
    (root / "init").write_text(STAGE1)
    (root / "init").chmod(0o755)
    listing = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
    archive = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root, input=listing,
                             capture_output=True, check=True).stdout
    image = dest / "initramfs.gz"
    image.write_bytes(gzip.compress(archive, compresslevel=1))
    return image


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memory-mb", type=int, default=6144)
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--kvm", action="store_true",
                    help="use KVM (nested KVM hung at kernel start on this project's machines: "
                         "the default is qemu's own emulation, slower but dependable)")
    ap.add_argument("command", nargs="+")
    args = ap.parse_args(argv)
    if args.kvm and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        sys.exit("cgroup2_vm: /dev/kvm is not usable here: the cgroup v2 guest needs KVM")
    vmlinuz, version = kernel()
    with tempfile.TemporaryDirectory(prefix="trialhouse-vm-") as tmp:
        work = Path(tmp)
        image = initramfs(work, version)
        out = work / "out"
        out.mkdir()
        (out / "stage2.sh").write_text(STAGE2.format(cwd=shlex.quote(os.getcwd()),
                                                     command=shlex.join(args.command)))
        accel = ["-enable-kvm", "-cpu", "host,-arch-capabilities"] if args.kvm else [
            "-accel", "tcg,thread=multi", "-cpu", "max"]
        qemu = ["qemu-system-x86_64", *accel, "-m", str(args.memory_mb),
                "-smp", str(args.cpus), "-nographic", "-no-reboot", "-kernel", str(vmlinuz),
                "-initrd", str(image),
                "-append", "console=ttyS0 quiet cgroup_no_v1=all panic=-1 rdinit=/init",
                "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
                "-virtfs", f"local,path={out},mount_tag=out,security_model=none"]
        try:
            subprocess.run(qemu, stdin=subprocess.DEVNULL, timeout=args.timeout, check=False)
        except subprocess.TimeoutExpired:
            print(f"cgroup2_vm: the guest ran past {args.timeout:g} s", file=sys.stderr)
            return 124
        rc = out / "rc"
        if not rc.exists():
            print("cgroup2_vm: the guest ended without the command's status (see its console above)",
                  file=sys.stderr)
            return 125
        return int(rc.read_text().strip() or 125)


if __name__ == "__main__":
    sys.exit(main())
